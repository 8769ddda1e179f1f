#!/usr/bin/env bash
# The container for real: build the project's Dockerfile with a Docker engine of our own and
# check what an operator relies on. Prints one line per check and `N passed, M failed`.
#
#   bash scripts/container-smoke.sh            # as root (installs docker.io, mmdebstrap if missing)
#
# The engine is private to this run: its own data root, exec root and socket, no bridge, no
# iptables, no IP forwarding or masquerading (the host's network is left as it is), and it is
# stopped on exit, whatever happens. Builds use the host's network (package downloads); the
# containers run with `--network none` (loopback only) and are checked through `docker exec`.
# When the Dockerfile's base image cannot be pulled (no registry here), a stand-in with the
# same name is made from Debian's packages (mmdebstrap), trusting the host's local CA
# certificates, and the Dockerfile is built unchanged but for that BASE_IMAGE argument.
# SMOKE_STATE (default /var/tmp/replica-assignor-smoke) keeps the engine's data root between
# runs, so a second run reuses the stand-in base and the dependency layers.
set -uo pipefail
cd "$(dirname "$0")/.."

STATE=${SMOKE_STATE:-/var/tmp/replica-assignor-smoke}
RUN=$(mktemp -d /tmp/assignor-smoke.XXXXXX)
SOCK="$RUN/docker.sock"
IMAGE=replica-assignor:smoke
passed=0
failed=0
started=$(date +%s)

say() { printf 'container-smoke: %s\n' "$*" >&2; }
ok() { passed=$((passed + 1)); printf 'PASS %s\n' "$*"; }
bad() { failed=$((failed + 1)); printf 'FAIL %s\n' "$*"; }
dk() { docker -H "unix://$SOCK" "$@"; }

cleanup() {
  local code=$?
  if [ -S "$SOCK" ]; then
    dk ps -aq 2>/dev/null | xargs -r docker -H "unix://$SOCK" rm -f >/dev/null 2>&1
  fi
  if [ -f "$RUN/docker.pid" ]; then
    local pid
    pid=$(cat "$RUN/docker.pid")
    kill "$pid" 2>/dev/null
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    kill -9 "$pid" 2>/dev/null
  fi
  grep -o " $RUN/[^ ]*" /proc/mounts 2>/dev/null | sort -r | xargs -r -n1 umount -l 2>/dev/null
  rm -rf "$RUN"
  exit "$code"
}
trap cleanup EXIT INT TERM

if [ "$(id -u)" != 0 ]; then
  say "must run as root (it starts its own Docker engine)"; exit 2
fi
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
command -v mmdebstrap >/dev/null 2>&1 || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  say "installing ${need[*]} from Debian's packages"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null \
    || { say "could not install ${need[*]}"; exit 2; }
fi

mkdir -p "$STATE/data"
dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
  --data-root "$STATE/data" --exec-root "$RUN/exec" -H "unix://$SOCK" \
  --pidfile "$RUN/docker.pid" >"$RUN/dockerd.log" 2>&1 &
for _ in $(seq 1 100); do dk version >/dev/null 2>&1 && break; sleep 0.2; done
dk version >/dev/null 2>&1 || { say "dockerd did not start:"; tail -5 "$RUN/dockerd.log" >&2; exit 2; }

# -- the base image: pulled, or a stand-in of the same name --------------------------------
base_ref=$(sed -n 's/^ARG BASE_IMAGE=//p' Dockerfile | head -n 1)
base_name=${base_ref%@*}
build_args=()
if ! dk image inspect "$base_ref" >/dev/null 2>&1 && ! timeout 60 docker -H "unix://$SOCK" pull -q "$base_ref" >/dev/null 2>&1; then
  if ! dk image inspect "$base_name" >/dev/null 2>&1; then
    say "cannot pull $base_ref: making a stand-in $base_name from Debian's packages"
    rootfs="$RUN/rootfs.tar"
    mmdebstrap --quiet --variant=minbase --include=python3,python3-pip,ca-certificates,passwd \
      bookworm "$rootfs" >/dev/null 2>&1 || { say "mmdebstrap failed"; exit 2; }
    dk import "$rootfs" replica-assignor-smoke/rootfs:bookworm >/dev/null
    ctx="$RUN/base"
    mkdir -p "$ctx/ca"
    cp /usr/local/share/ca-certificates/*.crt "$ctx/ca/" 2>/dev/null || true
    cat >"$ctx/Dockerfile" <<'EOF'
FROM replica-assignor-smoke/rootfs:bookworm
COPY ca/ /usr/local/share/ca-certificates/
RUN update-ca-certificates >/dev/null 2>&1; rm -f /usr/lib/python3*/EXTERNALLY-MANAGED
ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt LANG=C.UTF-8
CMD ["python3"]
EOF
    DOCKER_BUILDKIT=0 dk build -q --network host -t "$base_name" "$ctx" >/dev/null \
      || { say "could not build the stand-in base"; exit 2; }
  fi
  build_args=(--build-arg "BASE_IMAGE=$base_name")
fi

# -- build ---------------------------------------------------------------------------------
t0=$(date +%s)
if DOCKER_BUILDKIT=0 dk build -q --network host "${build_args[@]}" -t "$IMAGE" . >"$RUN/build.log" 2>&1; then
  ok "image builds ($(( $(date +%s) - t0 )) s, $(dk image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.0f MB", $1/1e6}'))"
else
  bad "image builds"; tail -20 "$RUN/build.log"
  echo "$passed passed, $((failed + 1)) failed"; exit 1
fi

# the health check's own schedule: healthy within start period + two intervals
limit=$(dk image inspect -f '{{json .Config.Healthcheck}}' "$IMAGE" \
  | python3 -c 'import json,sys; h=json.load(sys.stdin); print((h["StartPeriod"] + 2 * h["Interval"]) // 10**9)')

wait_health() {  # NAME -> the status reached (healthy, unhealthy, exited, or the last seen) and seconds taken
  local name=$1 t0 now status=""
  t0=$(date +%s%N)
  while :; do
    status=$(dk inspect -f '{{if .State.Health}}{{.State.Health.Status}}{{end}}' "$name" 2>/dev/null)
    { [ "$status" = healthy ] || [ "$status" = unhealthy ]; } && break
    [ "$(dk inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] || { status=exited; break; }
    now=$(date +%s%N)
    [ $(( (now - t0) / 1000000000 )) -gt $((limit + 10)) ] && break
    sleep 0.2
  done
  now=$(date +%s%N)
  echo "$status $(( (now - t0) / 1000000 ))" | awk '{printf "%s %.1f\n", $1, $2 / 1000}'
}

within() { awk -v s="$1" -v l="$limit" 'BEGIN { exit !(s <= l) }'; }

# -- 1: the default container ---------------------------------------------------------------
t0=$(date +%s.%N)
dk run -d --network none --name smoke-default "$IMAGE" >/dev/null
read -r status secs < <(wait_health smoke-default)
if [ "$status" = healthy ] && within "$secs"; then
  ok "healthy within ${secs} s of docker run (limit ${limit} s: start period + 2 intervals)"
else
  bad "healthy within ${limit} s (got '${status}')"; dk logs smoke-default 2>&1 | tail -5
fi
out=$(dk exec smoke-default replica-assignor assign --bootstrap-server 127.0.0.1:9095 \
  --partitions 12 --replication-factor 3 2>&1)
n=$(printf '%s' "$out" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["partitions"]))' 2>/dev/null)
[ "$n" = 12 ] && ok "assign through docker exec returns 12 partitions" \
  || bad "assign through docker exec returns 12 partitions (got: ${out:0:200})"
ids=$(dk exec smoke-default sh -c 'echo "$(id -u):$(id -g) $(id -gn)"' 2>&1)
[ "$ids" = "10001:10001 assignor" ] && ok "runs as 10001:10001 with a named group (assignor)" \
  || bad "runs as 10001:10001 with a named group (got '$ids')"
dk stop -t 20 smoke-default >/dev/null
code=$(dk inspect -f '{{.State.ExitCode}}' smoke-default)
if [ "$code" = 0 ] && dk logs smoke-default 2>/dev/null | grep -q '"server_stopped"'; then
  ok "docker stop: exit code 0 and server_stopped logged"
else
  bad "docker stop: exit code 0 and server_stopped logged (exit $code)"; dk logs smoke-default 2>&1 | tail -3
fi

# -- 2: a listener override given as arguments ----------------------------------------------
dk run -d --network none --name smoke-override "$IMAGE" \
  --override listeners=PLAINTEXT://0.0.0.0:9999 >/dev/null
read -r status secs < <(wait_health smoke-override)
port_ok=$(dk exec smoke-override replica-assignor assign --bootstrap-server 127.0.0.1:9999 \
  --partitions 3 --replication-factor 1 >/dev/null 2>&1 && echo yes)
[ "$status" = healthy ] && within "$secs" && [ "$port_ok" = yes ] \
  && ok "listener override as arguments (port 9999) is healthy in ${secs} s" \
  || bad "listener override as arguments is healthy (got '$status', answers on 9999: ${port_ok:-no})"
dk rm -f smoke-override >/dev/null

# -- 3: two worker processes under --init ---------------------------------------------------
dk run -d --init --network none --name smoke-workers "$IMAGE" \
  --override num.worker.processes=2 >/dev/null
read -r status secs < <(wait_health smoke-workers)
[ "$status" = healthy ] && within "$secs" && ok "num.worker.processes=2 with --init is healthy in ${secs} s" \
  || { bad "num.worker.processes=2 with --init is healthy (got '$status')"; dk logs smoke-workers 2>&1 | tail -5; }
dk stop -t 20 smoke-workers >/dev/null
code=$(dk inspect -f '{{.State.ExitCode}}' smoke-workers)
[ "$code" = 0 ] && ok "workers: docker stop gives exit code 0" || bad "workers: docker stop gives exit code 0 (got $code)"
dk rm -f smoke-workers >/dev/null

# -- 4: bad input: exit 2 with one line, never a hang ---------------------------------------
dk run --network none --name smoke-noconfig -e REPLICA_ASSIGNOR_CONFIG=/nope/server.properties "$IMAGE" \
  >/dev/null 2>&1
code=$(dk inspect -f '{{.State.ExitCode}}' smoke-noconfig)
lines=$(dk logs smoke-noconfig 2>&1 | grep -c .)
[ "$code" = 2 ] && [ "$lines" = 1 ] && ok "missing config file: exit 2 with one line ($(dk logs smoke-noconfig 2>&1))" \
  || bad "missing config file: exit 2 with one line (exit $code, $lines lines)"
dk run --network none --name smoke-badoverride "$IMAGE" --override max.connections=lots >/dev/null 2>&1
code=$(dk inspect -f '{{.State.ExitCode}}' smoke-badoverride)
lines=$(dk logs smoke-badoverride 2>&1 | grep -c .)
[ "$code" = 2 ] && [ "$lines" = 1 ] && ok "bad override: exit 2 with one line" \
  || bad "bad override: exit 2 with one line (exit $code, $lines lines)"
# a server that never starts serving: the health check says unhealthy, within its timeout
dk run -d --network none --name smoke-unhealthy --entrypoint sleep "$IMAGE" 600 >/dev/null
hc_out=$(dk exec smoke-unhealthy timeout 10 sh -c 'replica-assignor-server --health-check --status-file "$REPLICA_ASSIGNOR_STATUS_FILE" --config "$REPLICA_ASSIGNOR_CONFIG"; echo "exit $?"' 2>&1)
case "$hc_out" in
  *"exit 1"*) ok "health check of a server that is not serving: unhealthy, no hang" ;;
  *) bad "health check of a server that is not serving: unhealthy (got '$hc_out')" ;;
esac
dk rm -f smoke-unhealthy smoke-noconfig smoke-badoverride smoke-default >/dev/null 2>&1

say "done in $(( $(date +%s) - started )) s"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
