#!/usr/bin/env bash
# attack-beside-surge.sh [N] [load tool flags…] — the load tool's attack
# scenario: a surge of N users (default 10,000) alone, then the same surge
# beside every attack, against a throwaway Redis and database and one server
# instance with its default limits on. Prints the side-by-side report; the
# server's log is printed on failure.
set -euo pipefail
port=16391
persist=(--save "" --appendonly no)
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
n=${1:-10000}
shift || true

build
start_redis
fresh_db wr_attack
export WR_JWT_SECRET=attack-run-secret-attack-run-secret-0123
start_server $((n + 100)) on --products 1 --stock 100000000
"$bin/lt" attack --base http://127.0.0.1:18080 --admin http://127.0.0.1:18081 \
  --admin-token "$WR_ADMIN_TOKEN" --jwt-secret "$WR_JWT_SECRET" --mint-tokens \
  -n "$n" --over 10s --transport mix --target 200 "$@" || { tail -50 "$dir/server.log"; exit 1; }
