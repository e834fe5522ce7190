#!/bin/bash
# adaptive-compare.sh MODE [surge flags…] — a surge with an order delay
# injected halfway, in a room whose admission is MODE (fixed | adaptive).
#
# Starts a throwaway redis-server on a spare port, a fresh database
# wr_compare (dropped and re-created; psql with trust auth), one waitingroom
# instance with targetActive 100, a pool of 40, fault injection on and a 2 s
# adaptive window, then runs
#   loadtest surge -n 6000 --over 30s --transport mix --slowdown 300ms --slowdown-at 50%
# and prints the report and the limit's changes.
set -euo pipefail
mode=${1:?usage: $0 fixed|adaptive [surge flags]}
shift
port=${PORT:-16392}
persist=(--save "" --appendonly no)
source "$(dirname "$0")/throwaway.sh"
build
start_redis
fresh_db wr_compare
export WR_JWT_SECRET=adaptive-compare-secret-0123456789ab
export WR_TARGET_ACTIVE=100 WR_DB_POOL=40 WR_FAULT_INJECTION=on WR_ADAPTIVE_WINDOW=2s WR_ADAPTIVE_MIN=4 WR_ADAPTIVE_MAX=200
start_server
curl -sf -XPUT localhost:18081/admin/rooms/default -H 'Authorization: Bearer throwaway-admin-token' -d "{\"mode\":\"$mode\"}" >/dev/null
"$bin/lt" surge -n 6000 --over 30s --transport mix --instant --mint-tokens --base http://127.0.0.1:18080 \
  --admin http://127.0.0.1:18081 --admin-token throwaway-admin-token --slowdown 300ms --slowdown-at 50% --max-duration 3m "$@"
echo "limit changes:"
grep 'admission limit changed' "$dir/server.log" | sed 's/.*from=\([0-9]*\) to=\([0-9]*\) reason=\([a-z_]*\).*/\1→\2 (\3)/' | tr '\n' ' '
echo
