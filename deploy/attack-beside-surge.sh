#!/usr/bin/env bash
# attack-beside-surge.sh [N] [load tool flags…] — the load tool's attack
# scenario: a surge of N users (default 10,000) alone, then the same surge
# beside every attack, against a throwaway Redis and database and one server
# instance with its default limits on. Prints the side-by-side report; the
# server's log is printed on failure.
#
# attack-beside-surge.sh --gateway [N] [load tool flags…] — the same for
# gateway mode (gateway-attack): N anonymous visitors (default 1,000) over
# 20 s alone, then beside the gateway attacks, through one server in gateway
# mode (default limits, proof of work at WR_POW_DIFFICULTY, 16 bits here
# unless set, so that the visitors' and the stuffers' solving on this
# machine's cores does not swamp the figures) in front of the origin the
# load tool starts on 127.0.0.1:18090. The server's RSS is read from /proc.
# WR_SERVER_BIN=path runs that build of the server instead of this tree's.
set -euo pipefail
port=16391
persist=(--save "" --appendonly no)
source "$(dirname "${BASH_SOURCE[0]}")/throwaway.sh"
gateway=
if [[ ${1:-} == --gateway ]]; then
  gateway=1
  shift
fi
n=${1:-}
shift || true

build
[[ -n ${WR_SERVER_BIN:-} ]] && cp "$WR_SERVER_BIN" "$bin/wr"
start_redis
fresh_db wr_attack
if [[ -n $gateway ]]; then
  export WR_JWT_SECRET=attack-run-secret-attack-run-secret-0123 WR_UPSTREAM=http://127.0.0.1:18090 WR_ROOMS=default,sale,club \
    WR_PROTECT="POST /api/orders=sale, GET /checkout/*=sale, GET /members/*=club" \
    WR_PASS_KEY=$(head -c 32 /dev/urandom | base64) \
    WR_POW_DIFFICULTY=${WR_POW_DIFFICULTY:-16} WR_TARGET_ACTIVE=${WR_TARGET_ACTIVE:-500}
  start_server 10 on
  "$bin/lt" gateway-attack --base http://127.0.0.1:18080 --admin http://127.0.0.1:18081 \
    --admin-token "$WR_ADMIN_TOKEN" --room sale --origin-listen 127.0.0.1:18090 --server-pid "$srv" \
    -n "${n:-1000}" --over 20s "$@" || { tail -50 "$dir/server.log"; exit 1; }
  exit 0
fi
n=${n:-10000}
export WR_JWT_SECRET=attack-run-secret-attack-run-secret-0123
start_server $((n + 100)) on --products 1 --stock 100000000
"$bin/lt" attack --base http://127.0.0.1:18080 --admin http://127.0.0.1:18081 \
  --admin-token "$WR_ADMIN_TOKEN" --jwt-secret "$WR_JWT_SECRET" --mint-tokens \
  -n "$n" --over 10s --transport mix --target 200 "$@" || { tail -50 "$dir/server.log"; exit 1; }
