#!/bin/bash
# adaptive-compare.sh SCENARIO [LIMIT…] — one scenario of adaptive
# admission, run with each fixed limit of a sweep and then adaptive from a
# wrong start, each on a fresh stack, and a report table side by side.
#
# SCENARIO (the surge flags each uses; every run has a pool of 40, a 2 s
# adaptive window, --transport mix --instant, every order of product 1):
#   slow     6,000 shoppers over 30 s, a 300 ms order delay from 15 s;
#            adaptive from 100
#   recover  12,000 over 60 s, the delay from 15 s to 45 s; adaptive from 100
#   low      6,000 over 30 s, a fast database; adaptive from 5
#   hotrow   6,000 over 30 s, every order holding the one product's row
#            lock 10 ms longer (--row-delay 10ms); adaptive from 100
# LIMIT… overrides the sweep of fixed limits. The JSON reports and the
# server logs stay in $OUT (a new temporary directory by default); with
# OUT=DIR of an earlier sweep, the runs whose report is there are kept.
#
# Each run: a throwaway redis-server on a spare port, a fresh database
# wr_compare (dropped and re-created; psql with trust auth), one
# waitingroom instance with fault injection on, then loadtest surge. The
# table: throughput (orders ÷ drain time, first arrival to last READY),
# its ratio to the best fixed limit's, mean and p99 pool acquire wait,
# order p99, errors, lost users, active samples over the limit, and for
# the adaptive run the limit's changes.
set -euo pipefail
scenario=${1:?usage: $0 slow|recover|low|hotrow [fixed limits…]}
shift
port=${PORT:-16392}
persist=(--save "" --appendonly no)
source "$(dirname "$0")/throwaway.sh"
out=${OUT:-$(mktemp -d /tmp/adaptive-compare.XXXX)}
mkdir -p "$out"

n=6000 over=30s start=100
flags=()
case $scenario in
slow) sweep=(30 40 50 60 100) flags=(--slowdown 300ms --slowdown-at 15s) ;;
recover) n=12000 over=60s sweep=(40 50 60 100 150) flags=(--slowdown 300ms --slowdown-at 15s --slowdown-until 45s) ;;
low) sweep=(40 100 200) start=5 ;;
hotrow) sweep=(10 20 40 60 100) flags=(--row-delay 10ms) ;;
*) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
(($# > 0)) && sweep=("$@")

export WR_JWT_SECRET=adaptive-compare-secret-0123456789ab
export WR_DB_POOL=40 WR_FAULT_INJECTION=on WR_ADAPTIVE_WINDOW=2s WR_ADAPTIVE_MIN=4 WR_ADAPTIVE_MAX=200

# stop_stack ends this run's server and Redis (the next run starts fresh).
stop_stack() {
  kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null || true
  kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null || true
  srv= redis_pid=
}

# run MODE LIMIT writes $out/$scenario-MODE-LIMIT.json (and .log).
run() {
  local mode=$1 limit=$2 name=$scenario-$1-$2
  if [[ -s $out/$name.json ]]; then
    echo "== $name: kept from $out" >&2 # OUT=DIR resumes a sweep
    return
  fi
  echo "== $name" >&2
  start_redis
  fresh_db wr_compare
  export WR_TARGET_ACTIVE=$limit
  start_server "$n"
  curl -sf -XPUT localhost:18081/admin/rooms/default -H 'Authorization: Bearer throwaway-admin-token' \
    -d "{\"mode\":\"$mode\",\"targetActive\":$limit}" >/dev/null
  "$bin/lt" surge -n "$n" --over "$over" --transport mix --instant --mint-tokens --base http://127.0.0.1:18080 \
    --admin http://127.0.0.1:18081 --admin-token throwaway-admin-token --max-duration 4m \
    --out "$out/$name.json" "${flags[@]}" >"$out/$name.txt" 2>&1 || true
  { grep 'admission limit changed' "$dir/server.log" || true; } |
    jq -rj '"\(.from)→\(.to) (\(.reason)) "' >"$out/$name.changes"  # the server logs JSON
  cp "$dir/server.log" "$out/$name.log"
  stop_stack
}

build
for l in "${sweep[@]}"; do run fixed "$l"; done
run adaptive "$start"

# The table: one row per run, the adaptive one last.
files=()
for l in "${sweep[@]}"; do files+=("$out/$scenario-fixed-$l.json"); done
files+=("$out/$scenario-adaptive-$start.json")
echo
echo "scenario $scenario: $n shoppers over $over, pool 40, ${flags[*]:-fast database}; reports in $out"
jq -rs --arg changes "$(cat "$out/$scenario-adaptive-$start.changes")" '
  . as $all |
  ([$all[] | select(.mode == "fixed")] | max_by(.ordersPerSecond)) as $top |
  $top.ordersPerSecond as $best | $top.limit as $bestLimit |
  "| run | throughput orders/s | × best fixed | pool wait mean / p99 ms | order p99 ms | ordered | errors | lost | samples over limit |",
  "|---|---|---|---|---|---|---|---|---|",
  ($all[] | "| \(.mode) \(.limit)\(if .mode == "adaptive" then " (start)" else "" end)\(if .mode == "fixed" and .limit == $bestLimit then " **best**" else "" end) | \(.ordersPerSecond * 10 | round / 10) | \(.ordersPerSecond / $best * 100 | round / 100) | \(.poolWaitMeanMs * 10 | round / 10) / \(.poolWaitP99Ms * 10 | round / 10) | \(.orderRequests.p99_ns / 1e5 | round / 10) | \(.ordered) of \(.users) | \(.errors) | \(.lost) | \(.samplesActiveOverTarget) of \(.roomSamples) |"),
  "",
  "adaptive limit changes: \($changes)"
' < <(for f in "${files[@]}"; do
  b=$(basename "$f" .json); m=${b#"$scenario"-}
  jq --arg mode "${m%-*}" --argjson limit "${m##*-}" '{mode: $mode, limit: $limit, ordersPerSecond, poolWaitMeanMs, poolWaitP99Ms, orderRequests, ordered, users, errors, lost, samplesActiveOverTarget, roomSamples}' "$f"
done)
