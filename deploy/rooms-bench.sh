#!/usr/bin/env bash
# rooms-bench.sh [load tool flags…] — the load tool's rooms scenario for
# each count of idle rooms in ROOMS (default "100 1000 10000") on each
# count of instances in INSTANCES (default "1 2"): what idle rooms cost
# Redis and each instance, and a busy room's READY latency alone and among
# them (issue 29).
#
# For each (R, I) it starts a throwaway redis-server on PORT (16393), uses
# the database wr_rooms of the machine's Postgres (created if missing; psql
# with trust auth), starts I waitingroom instances (public 127.0.0.1:PORTS
# (18480), 18482, …, management 18481, 18483, …; one JWT secret, WR_DEV=1,
# WR_LOG_LEVEL=warn, limits off), runs
#   loadtest rooms --rooms R --instances … --redis … --mint-tokens [flags…]
# prints its report, and stops the instances and Redis. At the end it
# prints one row per (R, I). The JSON reports go to OUT (default: a
# temporary directory, removed at the end).
set -euo pipefail
port=${PORT:-16393}
ports=${PORTS:-18480}
persist=(--save "" --appendonly no)
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
rooms_list=${ROOMS:-100 1000 10000}
instances_list=${INSTANCES:-1 2}
out=${OUT:-$dir}
mkdir -p "$out"
srvs=()
list=

# stop_run stops the instances (SIGTERM, then their exit), then Redis.
stop_run() {
  for p in "${srvs[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${srvs[@]}"; do wait "$p" 2>/dev/null || true; done
  srvs=()
  if [[ -n $redis_pid ]]; then
    kill "$redis_pid" 2>/dev/null || true
    wait "$redis_pid" 2>/dev/null || true
    redis_pid=
  fi
}
trap 'stop_run; cleanup' EXIT

# ensure_db creates database wr_rooms when missing and points DATABASE_URL
# and REDIS_URL at it and at the throwaway Redis.
ensure_db() {
  psql -h 127.0.0.1 -U postgres -tAc "SELECT 1 FROM pg_database WHERE datname = 'wr_rooms'" | grep -q 1 ||
    psql -q -h 127.0.0.1 -U postgres -c "CREATE DATABASE wr_rooms"
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/wr_rooms?sslmode=disable" REDIS_URL="redis://127.0.0.1:$port/0"
}

# free_port P VAR ends the run if something listens on port P (VAR sets
# the port).
free_port() {
  if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then
    echo "rooms-bench: port $1 is taken (set $2)" >&2
    exit 1
  fi
}

# start_instances I starts I instances on ports from PORTS (18480) on and
# waits until each answers /readyz; list is their BASE=ADMIN pairs for
# --instances. A port already taken ends the run: the load tool would
# measure whatever answers there.
start_instances() {
  list=
  local i p
  for ((p = ports; p < ports + 2 * $1; p++)); do free_port "$p" PORTS; done
  for ((i = 0; i < $1; i++)); do
    local pub=$((ports + 2 * i)) adm=$((ports + 1 + 2 * i))
    WR_HTTP_ADDR=127.0.0.1:$pub WR_ADMIN_ADDR=127.0.0.1:$adm "$bin/wr" serve >"$dir/server-$i.log" 2>&1 &
    srvs+=($!)
    list+=${list:+,}http://127.0.0.1:$pub=http://127.0.0.1:$adm
  done
  for ((i = 0; i < $1; i++)); do
    until curl -sf "localhost:$((ports + 1 + 2 * i))/readyz" >/dev/null; do
      kill -0 "${srvs[i]}" 2>/dev/null || { echo "instance $i exited:" >&2; tail -30 "$dir/server-$i.log" >&2; exit 1; }
      sleep 0.1
    done
  done
  for ((i = 0; i < $1; i++)); do
    kill -0 "${srvs[i]}" 2>/dev/null || { echo "instance $i exited:" >&2; tail -30 "$dir/server-$i.log" >&2; exit 1; }
  done
}

# row prints a report's row of the table.
row() {
  jq -r '[.rooms, (.instances | length), (.among.window.redisCommandsPerSecond // 0), (.perIdleRoom.redisCommandsPerSecond // 0),
      (.among.window.redisCores // 0), ([.among.window.instances[]? | .cores * 1000 | round / 1000 | tostring] | join("/")),
      ((.lone.ready.latency.p50_ns // 0) / 1e6), ((.among.ready.latency.p50_ns // 0) / 1e6), (.readyP50Ratio // 0)] | @tsv' "$1" |
    while IFS=$'\t' read -r r i cmds per cpu inst lone among ratio; do
      printf '%6s %2s %12.0f %10.1f %9.3f %-16s %10.1f %10.1f %7.2f\n' "$r" "$i" "$cmds" "$per" "$cpu" "${inst:--}" "$lone" "$among" "$ratio"
    done
}

build
ensure_db
export WR_JWT_SECRET=rooms-bench-secret-rooms-bench-secret-01 WR_ADMIN_TOKEN=throwaway-admin-token \
  WR_DEV=1 WR_LOG_LEVEL=warn WR_RATE_LIMITS=off WR_SHUTDOWN_TIMEOUT=5s
for n in $instances_list; do
  for r in $rooms_list; do
    free_port "$port" PORT
    start_redis
    start_instances "$n"
    echo "rooms-bench: $r idle rooms on $n instance(s)" >&2
    "$bin/lt" rooms --instances "$list" --admin-token "$WR_ADMIN_TOKEN" --redis "$REDIS_URL" \
      --mint-tokens --jwt-secret "$WR_JWT_SECRET" --rooms "$r" --out "$out/rooms-$r-$n.json" "$@" ||
      { tail -30 "$dir"/server-*.log >&2; exit 1; }
    stop_run
  done
done

echo
echo "idle rooms R on I instances: over the idle window among R, Redis commands/s, (among − lone) ÷ R, Redis and each instance's CPU in cores; the busy room's READY p50, ms"
printf '%6s %2s %12s %10s %9s %-16s %10s %10s %7s\n' R I "Redis cmd/s" cmd/room/s "Redis CPU" "instance CPU" "READY lone" "among R" ratio
for n in $instances_list; do
  for r in $rooms_list; do
    row "$out/rooms-$r-$n.json"
  done
done
