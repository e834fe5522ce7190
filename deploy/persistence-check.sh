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
case $mode in
  always)   persist=(--appendonly yes --appendfsync always --save "") ;;
  everysec) persist=(--appendonly yes --appendfsync everysec --save "") ;;
  none)     persist=(--appendonly no --save "") ;;
  *) echo "unknown mode $mode" >&2; exit 2 ;;
esac
source "$(dirname "$0")/throwaway.sh"
build
start_redis
fresh_db wr_persist
export WR_JWT_SECRET=persistence-check-secret-0123456789 WR_TARGET_ACTIVE=0 WR_BCRYPT_COST=4
start_server
"$bin/lt" surge -n 6000 --over 6s --transport poll --instant --mint-tokens --base http://127.0.0.1:18080 \
  --admin http://127.0.0.1:18081 --admin-token throwaway-admin-token --max-duration 12s >/dev/null 2>&1 &
lt=$!
sleep 3.5
kill -9 "$redis_pid"
kill -9 "$lt"
wait "$lt" 2>/dev/null || true
sleep 2.5 # requests in flight fail (the client's read timeout is 1 s)
entered=$(curl -s localhost:18081/metrics | awk '/^waitingroom_entered_total/ {s += $2} END {print s + 0}')
start_redis
kept=$(redis-cli -p "$port" zcard 'wr:{default}:queue')
echo "$mode: places handed out before the crash $entered, kept after the restart $kept, lost $((entered - kept))"
