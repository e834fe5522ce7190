# throwaway.sh — sourced by the measurement scripts in deploy/: builds the
# server and the load tool, starts a throwaway redis-server, recreates a
# database, starts one server instance, and cleans all of it up on exit.
# The caller sets port (Redis) and persist (redis-server persistence
# flags), then calls build, start_redis, fresh_db NAME and start_server.

cd "$(dirname "${BASH_SOURCE[0]}")/.."
bin=$(mktemp -d)
dir=$(mktemp -d)
redis_pid=
srv=
cleanup() {
  [[ -n $srv ]] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
  kill "$redis_pid" 2>/dev/null || true
  rm -rf "$dir" "$bin"
}
trap cleanup EXIT

build() {
  go build -o "$bin/wr" ./cmd/waitingroom
  go build -o "$bin/lt" ./loadtest
}

# start_redis runs redis-server on $port over $dir (again after a crash).
start_redis() {
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" "${persist[@]}" >/dev/null &
  redis_pid=$!
  until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; do sleep 0.05; done
}

# fresh_db NAME drops and creates database NAME and points DATABASE_URL and
# REDIS_URL at it and at the throwaway Redis.
fresh_db() {
  psql -q -h 127.0.0.1 -U postgres -c "DROP DATABASE IF EXISTS $1" -c "CREATE DATABASE $1" 2>/dev/null
  export DATABASE_URL="postgres://postgres@127.0.0.1:5432/$1?sslmode=disable" REDIS_URL="redis://127.0.0.1:$port/0"
}

# start_server [USERS [LIMITS [SEED FLAGS…]]] seeds USERS users (6,000),
# with the seed flags given, and serves on 127.0.0.1:18080 (public) and
# :18081 (management, admin token "throwaway-admin-token") with
# WR_RATE_LIMITS=LIMITS (off); its log is $dir/server.log.
start_server() {
  export WR_ADMIN_TOKEN=throwaway-admin-token WR_RATE_LIMITS=${2:-off} WR_HTTP_ADDR=127.0.0.1:18080 WR_ADMIN_ADDR=127.0.0.1:18081
  "$bin/wr" seed --users "${1:-6000}" "${@:3}" >/dev/null 2>&1
  "$bin/wr" serve >"$dir/server.log" 2>&1 &
  srv=$!
  until curl -sf localhost:18081/readyz >/dev/null; do sleep 0.1; done
}
