# replica-assignor-server: the Kafka-protocol replica assignor, on the embedded 6-broker example
# cluster unless told otherwise. README.md "Container" has the whole story; in short:
#
#   docker build -t replica-assignor .
#   docker run --rm -p 9095:9095 replica-assignor
#   replica-assignor assign --bootstrap-server 127.0.0.1:9095 --partitions 12 --replication-factor 3
#
# Knobs (environment, read by the entrypoint):
#   REPLICA_ASSIGNOR_CONFIG  properties file   (default /etc/replica-assignor/server.properties;
#                            mount your own over it, or point this elsewhere)
#   REPLICA_ASSIGNOR_HOST    listen address     (default 0.0.0.0)
#   REPLICA_ASSIGNOR_PORT    listen port        (default 9095; build with --build-arg PORT=... to
#                            change the default and the EXPOSEd port)
# Anything after the image name is passed on, e.g. `--override replica.assignor.class.name=striped`,
# `--override listeners=PLAINTEXT://0.0.0.0:9999` or
# `--override advertised.listeners=PLAINTEXT://assignor.example.internal:9095` (set it when Kafka
# clients bootstrap through Metadata: they connect to the advertised address).
# The health check probes what the server actually bound: the server writes its listener to
# REPLICA_ASSIGNOR_STATUS_FILE once it serves, and `--health-check --status-file` reads it, so
# overrides given as arguments are seen too.
# With `--override num.worker.processes=N` (one worker per core), run with `docker run --init`:
# the server is PID 1 and does not reap a crashed worker's helper process.
#
# Build arguments:
#   BASE_IMAGE     the Python base, pinned by version, Debian release and digest
#   EXTRA_CA_CERT  a PEM CA certificate that pip must trust as well (a TLS-intercepting proxy):
#                  --build-arg EXTRA_CA_CERT="$(cat proxy-ca.pem)"; a CA certificate is public,
#                  so a build argument (kept in the image history) is fine for it
ARG BASE_IMAGE=python:3.11.14-slim-bookworm@sha256:65a93d69fa75478d554f4ad27c85c1e69fa184956261b4301ebaf6dbb0a3543d

FROM ${BASE_IMAGE} AS base
ARG EXTRA_CA_CERT=""
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_CERT=/etc/ssl/certs/ca-certificates.crt
RUN if [ -n "$EXTRA_CA_CERT" ]; then \
        printf '%s\n' "$EXTRA_CA_CERT" > /usr/local/share/ca-certificates/extra-ca.crt \
        && update-ca-certificates >/dev/null; \
    fi
# the ranges live in pyproject.toml, the exact versions in constraints.txt: this layer changes
# only when one of them does
COPY pyproject.toml constraints.txt /tmp/
RUN python3 -c "import tomllib; p = tomllib.load(open('/tmp/pyproject.toml', 'rb')); \
print('\n'.join(p['project']['dependencies']), file=open('/tmp/runtime.txt', 'w')); \
print('\n'.join(p['build-system']['requires']), file=open('/tmp/build.txt', 'w'))"

FROM base AS build
RUN python3 -m pip install -c /tmp/constraints.txt -r /tmp/build.txt
WORKDIR /src
COPY pyproject.toml README.md ./
COPY assignors ./assignors
COPY cluster ./cluster
COPY protocol ./protocol
COPY server ./server
COPY schemas ./schemas
COPY planner ./planner
COPY cli ./cli
COPY conformance ./conformance
COPY watcher ./watcher
COPY web ./web
COPY kafka_replica_assignor ./kafka_replica_assignor
RUN python3 -m pip wheel --no-deps --no-build-isolation --wheel-dir /wheels .

FROM base
# runtime dependencies only (kafka-python, uvloop, structlog, prometheus-client, orjson), in their
# own layer: a change in the sources reinstalls only the project's wheel
RUN python3 -m pip install -c /tmp/constraints.txt -r /tmp/runtime.txt
RUN groupadd --system --gid 10001 assignor \
    && useradd --system --uid 10001 --gid 10001 --create-home --home-dir /home/assignor \
       --shell /usr/sbin/nologin assignor
COPY --from=build /wheels /tmp/wheels
RUN python3 -m pip install --no-deps /tmp/wheels/*.whl && rm -rf /tmp/wheels
COPY config/server.properties /etc/replica-assignor/server.properties
ARG PORT=9095
ENV REPLICA_ASSIGNOR_CONFIG=/etc/replica-assignor/server.properties \
    REPLICA_ASSIGNOR_HOST=0.0.0.0 \
    REPLICA_ASSIGNOR_PORT=${PORT} \
    REPLICA_ASSIGNOR_STATUS_FILE=/tmp/replica-assignor.status.json
USER 10001:10001
WORKDIR /home/assignor
EXPOSE ${PORT}
# healthy within start-period + 2 intervals of a good start; a failed start is unhealthy, never a hang
HEALTHCHECK --interval=5s --timeout=4s --start-period=10s --retries=3 \
    CMD ["/bin/sh", "-c", "exec replica-assignor-server --health-check --status-file \"$REPLICA_ASSIGNOR_STATUS_FILE\" --config \"$REPLICA_ASSIGNOR_CONFIG\""]
# `exec`: the server is PID 1 and gets SIGTERM from `docker stop` (graceful shutdown, exit 0)
ENTRYPOINT ["/bin/sh", "-c", "exec replica-assignor-server --config \"$REPLICA_ASSIGNOR_CONFIG\" --status-file \"$REPLICA_ASSIGNOR_STATUS_FILE\" --override \"listeners=PLAINTEXT://$REPLICA_ASSIGNOR_HOST:$REPLICA_ASSIGNOR_PORT\" \"$@\"", "replica-assignor-server"]
CMD []
