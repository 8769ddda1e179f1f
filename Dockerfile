# replica-assignor-server: the Kafka-protocol replica assignor, on the embedded 6-broker example
# cluster unless told otherwise.
#
#   docker build -t replica-assignor .
#   docker run --rm -p 9095:9095 replica-assignor
#   replica-assignor assign --bootstrap-server 127.0.0.1:9095 --partitions 12 --replication-factor 3
#
# Knobs (environment, read by the entrypoint and the health check):
#   REPLICA_ASSIGNOR_CONFIG  properties file   (default /etc/replica-assignor/server.properties;
#                            mount your own over it, or point this elsewhere)
#   REPLICA_ASSIGNOR_HOST    listen address     (default 0.0.0.0)
#   REPLICA_ASSIGNOR_PORT    listen port        (default 9095; build with --build-arg PORT=... to
#                            change the default and the EXPOSEd port)
# With `--override num.worker.processes=N` (one worker per core), run the container with
# `docker run --init`: the server is PID 1 and does not reap a crashed worker's helper process.
# Anything after the image name is passed on, e.g. `--override replica.assignor.class.name=striped`
# or `--override advertised.listeners=PLAINTEXT://assignor.example.internal:9095` (set it when
# Kafka clients bootstrap through Metadata: they connect to the advertised address).
#
# The wheel test (tests/e2e/test_wheel_install.py) reads the ENTRYPOINT, CMD, ENV and HEALTHCHECK
# below and runs exactly them in a fresh virtual environment, standing in for `docker run`.

FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY assignors ./assignors
COPY protocol ./protocol
COPY server ./server
COPY schemas ./schemas
COPY planner ./planner
COPY cli ./cli
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels .

FROM python:3.11-slim
ARG PORT=9095
ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    REPLICA_ASSIGNOR_CONFIG=/etc/replica-assignor/server.properties \
    REPLICA_ASSIGNOR_HOST=0.0.0.0 \
    REPLICA_ASSIGNOR_PORT=${PORT}
RUN useradd --system --uid 10001 --user-group --create-home --home-dir /home/assignor --shell /usr/sbin/nologin assignor
# runtime dependencies only (kafka-python, uvloop, structlog, prometheus-client): no planner or test extras
COPY --from=build /wheels /tmp/wheels
RUN pip install --no-cache-dir /tmp/wheels/*.whl && rm -rf /tmp/wheels
COPY config/server.properties /etc/replica-assignor/server.properties
USER 10001:10001
WORKDIR /home/assignor
EXPOSE ${PORT}
HEALTHCHECK --interval=30s --timeout=5s --start-period=5s --retries=3 \
    CMD ["/bin/sh", "-c", "exec replica-assignor-server --health-check --config \"$REPLICA_ASSIGNOR_CONFIG\" --override \"listeners=PLAINTEXT://$REPLICA_ASSIGNOR_HOST:$REPLICA_ASSIGNOR_PORT\""]
# `exec`: the server is PID 1 and gets SIGTERM from `docker stop` (graceful shutdown, exit 0)
ENTRYPOINT ["/bin/sh", "-c", "exec replica-assignor-server --config \"$REPLICA_ASSIGNOR_CONFIG\" --override \"listeners=PLAINTEXT://$REPLICA_ASSIGNOR_HOST:$REPLICA_ASSIGNOR_PORT\" \"$@\"", "replica-assignor-server"]
CMD []
