#!/bin/bash
# persistence-check.sh MODE — how many queue places survive a Redis crash.
#
# Starts a throwaway redis-server (MODE: always | everysec | none) on a spare
# port and a waitingroom instance on it, lets a polling surge enter users,
# kills redis-server with SIGKILL mid-surge, stops the surge, starts
# redis-server again on the same directory and compares the places the
# server had handed out (waitingroom_entered_total) with the places Redis
# still holds. Needs redis-server, psql access to DATABASE_URL's server
# (trust auth) and Go; creates and drops the database wr_persist.
set -euo pipefail
mode=${1:?usage: $0 always|everysec|none}
port=${PORT:-16391}
cd "$(dirname "$0")/.."
bin=$(mktemp -d)
dir=$(mktemp -d)
go build -o "$bin/wr" ./cmd/waitingroom
go build -o "$bin/lt" ./loadtest
case $mode in
  always)   persist=(--appendonly yes --appendfsync always --save "") ;;
  everysec) persist=(--appendonly yes --appendfsync everysec --save "") ;;
  none)     persist=(--appendonly no --save "") ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
redis_pid=
startredis() {
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" "${persist[@]}" >/dev/null &
  redis_pid=$!
  until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; do sleep 0.05; done
}
srv=
cleanup() {
  [[ -n $srv ]] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
  kill "$redis_pid" 2>/dev/null || true
  rm -rf "$dir" "$bin"
}
trap cleanup EXIT
startredis
psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS wr_persist" -c "CREATE DATABASE wr_persist" 2>/dev/null
export DATABASE_URL="postgres://postgres@127.0.0.1:5432/wr_persist?sslmode=disable" REDIS_URL="redis://127.0.0.1:$port/0"
export WR_JWT_SECRET=persistence-check-secret-0123456789 WR_ADMIN_TOKEN=t WR_RATE_LIMITS=off WR_TARGET_ACTIVE=0
export WR_BCRYPT_COST=4 WR_HTTP_ADDR=127.0.0.1:18080 WR_ADMIN_ADDR=127.0.0.1:18081
"$bin/wr" seed --users 6000 >/dev/null 2>&1
"$bin/wr" serve >/dev/null 2>&1 &
srv=$!
until curl -sf localhost:18081/readyz >/dev/null; do sleep 0.1; done
"$bin/lt" surge -n 6000 --over 6s --transport poll --mint-tokens --base http://127.0.0.1:18080 \
  --admin http://127.0.0.1:18081 --admin-token t --max-duration 12s >/dev/null 2>&1 &
lt=$!
sleep 3.5
kill -9 "$redis_pid"
kill -9 "$lt"
wait "$lt" 2>/dev/null || true
sleep 2.5 # requests in flight fail (the client's read timeout is 1 s)
entered=$(curl -s localhost:18081/metrics | awk '/^waitingroom_entered_total/ {s += $2} END {print s + 0}')
startredis
kept=$(redis-cli -p "$port" zcard 'wr:{default}:queue')
echo "$mode: places handed out before the crash $entered, kept after the restart $kept, lost $((entered - kept))"
