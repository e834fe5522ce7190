#!/usr/bin/env bash
# dev-services.sh: find or start the Redis and PostgreSQL that `make run`,
# `make test` and `make bench` use.
#
# Usage:
#   deploy/dev-services.sh [up] [--db NAME]  print `export` lines (default command)
#   deploy/dev-services.sh up --no-db        the same for Redis alone
#   deploy/dev-services.sh stop              stop the throwaway instances started here
#   deploy/dev-services.sh status            say what is running (stderr only)
#
# stdout carries ONLY `export REDIS_URL=...` and `export DATABASE_URL=...`;
# every human message goes to stderr. Callers import the URLs with
#   svc="$(deploy/dev-services.sh)" && eval "$svc"
# (two steps: `eval "$(cmd)"` would ignore cmd's failure).
#
# Each service is resolved on its own, first match wins:
#   1. REDIS_URL / DATABASE_URL already set: used exactly as given. If it does
#      not answer, this is an error that names the variable (exit 1). It is never
#      silently replaced by another server: whoever set it meant that server, and
#      running the tests or the demo against a different one would hide the
#      mistake. An explicit DATABASE_URL is not modified and its database is not
#      created. Unset the variable to let this script pick a server.
#   2. The standard local ports, if they answer: Redis 127.0.0.1:6379 (db 0) and
#      PostgreSQL 127.0.0.1:5432 as user `postgres` without a password (trust).
#      Skipped when WR_DEV_FORCE_LOCAL=1.
#   3. Throwaway instances under .run/ (git-ignored): Redis on 56379 and
#      PostgreSQL on 55432 (the next free port if one is taken). Missing Debian
#      packages (redis-server, postgresql) are installed with apt-get when
#      running as root. PostgreSQL refuses to run as root, so as root initdb and
#      pg_ctl run as the `postgres` system user (runuser). The data survives
#      `stop` (demo data is kept); `rm -rf .run` after `stop` wipes it.
#
# With --db NAME (default: waitingroom) DATABASE_URL names that database, created
# when missing on servers chosen in steps 2 and 3. `--db postgres` suits the
# tests, whose helpers create a fresh database each. With --no-db no PostgreSQL
# is looked for or started (make run-gateway: a gateway on Redis alone); a
# DATABASE_URL already set is still checked and printed.
#
# Knobs: WR_DEV_FORCE_LOCAL=1, WR_DEV_REDIS_PORT (56379), WR_DEV_PG_PORT (55432),
# WR_DEV_RUN_DIR (<repo>/.run). Every wait is bounded; running `up` twice
# reuses what is already running.
# shellcheck disable=SC2016,SC2012 # inner sh -c scripts read their own $1; ls on fixed paths
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUN_DIR=${WR_DEV_RUN_DIR:-$ROOT/.run}
REDIS_DIR=$RUN_DIR/redis
PG_LINK=$RUN_DIR/pg # the directory, or a link to it (see pg_dirs)
REDIS_BASE_PORT=${WR_DEV_REDIS_PORT:-56379}
PG_BASE_PORT=${WR_DEV_PG_PORT:-55432}
PG_PROBE_TIMEOUT=5 # seconds, per probe

log() { printf 'dev-services: %s\n' "$*" >&2; }
die() {
	log "error: $*"
	exit 1
}
have() { command -v "$1" >/dev/null 2>&1; }
is_root() { [[ $(id -u) == 0 ]]; }

# redact URL: the URL with its password replaced by ***.
redact() { sed -E 's#(://[^:/@]*:)[^@/]*@#\1***@#' <<<"$1"; }

# shquote VALUE: VALUE as one shell word (quoted only when it has to be).
shquote() {
	if [[ $1 =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then
		printf '%s' "$1"
	else
		printf "'%s'" "${1//\'/\'\\\'\'}"
	fi
}

# url_hostport URL DEFAULT_PORT: sets HOST and PORT from URL.
url_hostport() {
	local re='^[A-Za-z][A-Za-z0-9+.-]*://([^@/]*@)?(\[[^]/]*\]|[^:/?]*)(:([0-9]+))?'
	[[ $1 =~ $re ]] || return 1
	HOST=${BASH_REMATCH[2]}
	HOST=${HOST#[}
	HOST=${HOST%]}
	[[ -n $HOST ]] || HOST=127.0.0.1
	PORT=${BASH_REMATCH[4]:-$2}
}

# tcp_open HOST PORT: true when something accepts a TCP connection there.
tcp_open() {
	timeout 2 bash -c 'exec 3<>"/dev/tcp/$1/$2"' _ "$1" "$2" 2>/dev/null
}

# ---------------------------------------------------------------- probes

# redis_ok URL: true when a Redis answers PING at URL.
redis_ok() {
	local url=$1 out
	if have redis-cli; then
		out=$(timeout 5 redis-cli -u "$url" ping 2>/dev/null) || return 1
		[[ $out == PONG ]]
		return
	fi
	local HOST PORT
	url_hostport "$url" 6379 || return 1
	if [[ $url == rediss://* ]]; then # TLS: no RESP over /dev/tcp; accept a connection
		tcp_open "$HOST" "$PORT"
		return
	fi
	# Without credentials we need +PONG; with them -NOAUTH still proves a Redis.
	local want='+PONG*'
	[[ $url =~ ://[^/]*@ ]] && want='[+-]*'
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf "PING\r\n" >&3
		IFS= read -r line <&3 || exit 1
		[[ $line == $3 ]]' _ "$HOST" "$PORT" "$want" 2>/dev/null
}

# pg_ok URL: true when PostgreSQL accepts URL. With psql this is a real login
# (user, password, database); on failure its message is left in PG_ERR.
pg_ok() {
	local url=$1
	PG_ERR=""
	if have psql; then
		PG_ERR=$(PGCONNECT_TIMEOUT=$PG_PROBE_TIMEOUT timeout 15 \
			psql "$url" -XqAt -c 'SELECT 1' 2>&1 >/dev/null) && return 0
		PG_ERR=$(head -n 3 <<<"$PG_ERR")
		return 1
	fi
	if have pg_isready; then
		timeout 15 pg_isready -q -t "$PG_PROBE_TIMEOUT" -d "$url"
		return
	fi
	# No client tools: send an SSLRequest; a PostgreSQL server answers N or S.
	local HOST PORT
	url_hostport "$url" 5432 || return 1
	timeout 3 bash -c '
		exec 3<>"/dev/tcp/$1/$2" || exit 1
		printf "\x00\x00\x00\x08\x04\xd2\x16\x2f" >&3
		IFS= read -r -n 1 c <&3 || exit 1
		[[ $c == N || $c == S ]]' _ "$HOST" "$PORT" 2>/dev/null
}

# wait_for SECONDS CMD...: run CMD every half second until it succeeds.
wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@"; do
		((SECONDS < deadline)) || return 1
		sleep 0.5
	done
}

gone() { ! kill -0 "$1" 2>/dev/null; }

# free_port FIRST: the first port in FIRST..FIRST+20 that nothing listens on.
free_port() {
	local p
	for ((p = $1; p <= $1 + 20; p++)); do
		tcp_open 127.0.0.1 "$p" || {
			echo "$p"
			return 0
		}
	done
	die "no free port in $1..$(($1 + 20))"
}

# detached CMD...: run CMD with stdin from /dev/null and every descriptor above
# 2 closed. Servers started through it (and whatever they fork) must not keep
# open a pipe the caller waits on, such as the `$(...)` around this script.
detached() {
	(
		fds=()
		for f in "/proc/$BASHPID/fd/"*; do
			f=${f##*/}
			((f > 2)) && fds+=("$f")
		done
		for f in "${fds[@]}"; do
			eval "exec $f>&-" 2>/dev/null || true
		done
		"$@" </dev/null
	)
}

# ---------------------------------------------------------------- packages

APT_UPDATED=""
# need_packages PKG...: install Debian packages (root only).
need_packages() {
	if ! is_root; then
		die "missing $*; install them (sudo apt-get update && sudo apt-get install -y $*) or set REDIS_URL / DATABASE_URL"
	fi
	have apt-get || die "missing $* and no apt-get; install them or set REDIS_URL / DATABASE_URL"
	log "installing $* with apt-get"
	if [[ -z $APT_UPDATED ]]; then
		detached apt-get update
		APT_UPDATED=1
	fi
	# detached: package scripts may start the service they install.
	detached env DEBIAN_FRONTEND=noninteractive apt-get install -y "$@"
}

# ---------------------------------------------------------------- Redis

redis_pid() {
	local pid
	[[ -s $REDIS_DIR/redis.pid ]] || return 1
	pid=$(<"$REDIS_DIR/redis.pid")
	[[ $pid =~ ^[0-9]+$ ]] && kill -0 "$pid" 2>/dev/null &&
		[[ $(cat "/proc/$pid/comm" 2>/dev/null) == redis-server* ]] || return 1
	echo "$pid"
}

redis_local_up() {
	local port url
	if redis_pid >/dev/null && [[ -s $REDIS_DIR/port ]]; then
		port=$(<"$REDIS_DIR/port")
		url=redis://127.0.0.1:$port/0
		wait_for 10 redis_ok "$url" || die "throwaway Redis (pid $(redis_pid)) does not answer on $port; see $REDIS_DIR/redis.log"
		log "Redis: reusing throwaway instance on 127.0.0.1:$port"
		REDIS_URL=$url
		return
	fi
	have redis-server || need_packages redis-server
	have redis-server || die "redis-server still missing after install"
	mkdir -p "$REDIS_DIR"
	port=$(free_port "$REDIS_BASE_PORT")
	log "Redis: starting throwaway instance on 127.0.0.1:$port (data in $REDIS_DIR)"
	rm -f "$REDIS_DIR/redis.pid"
	detached redis-server --port "$port" --bind 127.0.0.1 --daemonize yes \
		--pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log" \
		--dir "$REDIS_DIR" --save '' --appendonly no
	echo "$port" >"$REDIS_DIR/port"
	url=redis://127.0.0.1:$port/0
	wait_for 15 redis_ok "$url" || die "throwaway Redis did not answer within 15s; see $REDIS_DIR/redis.log"
	REDIS_URL=$url
}

redis_local_stop() {
	local pid
	if ! pid=$(redis_pid); then
		log "Redis: no throwaway instance running"
		rm -f "$REDIS_DIR/redis.pid"
		return
	fi
	log "Redis: stopping throwaway instance (pid $pid)"
	kill -TERM "$pid"
	if ! wait_for 10 gone "$pid"; then
		log "Redis: still running after 10s, sending SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
	rm -f "$REDIS_DIR/redis.pid"
}

# ---------------------------------------------------------------- PostgreSQL

# as_pg CMD...: run CMD as the postgres system user when we are root
# (PostgreSQL refuses to run as root), from / so its cwd is always readable.
as_pg() {
	if is_root; then
		(cd / && runuser -u postgres -- "$@")
	else
		(cd / && "$@")
	fi
}

# pg_bindir [MAJOR]: the directory holding initdb, pg_ctl and postgres; the
# highest installed version unless MAJOR is given.
pg_bindir() {
	local d p
	if [[ -n ${1:-} ]]; then
		d=/usr/lib/postgresql/$1/bin
		[[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] && echo "$d"
		return
	fi
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -rV); do
		[[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] && {
			echo "$d"
			return
		}
	done
	p=$(command -v initdb 2>/dev/null) || return 1
	d=$(dirname "$(readlink -f "$p")")
	[[ -x $d/pg_ctl && -x $d/postgres ]] && echo "$d"
}

# pg_dirs: set PG_HOME (the throwaway's directory), PG_DATA and PG_SOCK.
# As root the postgres user must be able to reach the data directory. When the
# checkout lives where it cannot (e.g. under /root, mode 700), .run/pg is made
# a link to a directory under /tmp and the real path is used from then on.
pg_dirs() {
	mkdir -p "$RUN_DIR"
	if is_root; then
		id postgres >/dev/null 2>&1 || die "no 'postgres' system user (the Debian postgresql package creates it)"
		if [[ ! -e $PG_LINK ]] && ! runuser -u postgres -- test -x "$RUN_DIR" 2>/dev/null; then
			local alt
			alt=/tmp/waitingroom-pg-$(printf '%s' "$RUN_DIR" | md5sum | cut -c1-12)
			log "PostgreSQL: user postgres cannot reach $RUN_DIR; keeping its files in $alt"
			mkdir -p "$alt"
			ln -sfn "$alt" "$PG_LINK"
		fi
		mkdir -p "$PG_LINK"
		PG_HOME=$(readlink -f "$PG_LINK")
		[[ $(stat -c %U "$PG_HOME") == postgres || $(stat -c %U "$PG_HOME") == root ]] ||
			die "$PG_HOME is owned by $(stat -c %U "$PG_HOME"); remove it"
		chown postgres: "$PG_HOME"
		chmod 700 "$PG_HOME"
	else
		mkdir -p "$PG_LINK"
		PG_HOME=$(readlink -f "$PG_LINK")
	fi
	PG_DATA=$PG_HOME/data
	PG_SOCK=$PG_HOME/sock
}

pg_running() { [[ -d $PG_DATA ]] && as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" status >/dev/null 2>&1; }

# pg_select_bin: set PG_BIN, matching an existing data directory's version.
pg_select_bin() {
	local major=""
	[[ -s $PG_DATA/PG_VERSION ]] && major=$(<"$PG_DATA/PG_VERSION")
	if [[ -n $major ]]; then
		PG_BIN=$(pg_bindir "$major") || true
		[[ -n $PG_BIN ]] || die "$PG_DATA was made by PostgreSQL $major, which is not installed; run '$0 stop' and remove $PG_HOME"
		return
	fi
	PG_BIN=$(pg_bindir) || true
	if [[ -z $PG_BIN ]]; then
		need_packages postgresql
		PG_BIN=$(pg_bindir) || true
		[[ -n $PG_BIN ]] || die "PostgreSQL server binaries not found after install (looked in /usr/lib/postgresql/*/bin)"
	fi
}

pg_local_up() {
	local port
	pg_dirs
	pg_select_bin
	if [[ ! -s $PG_DATA/PG_VERSION ]]; then
		log "PostgreSQL: initdb in $PG_DATA ($PG_BIN)"
		rm -rf "$PG_DATA"
		as_pg mkdir -p -m 700 "$PG_DATA" "$PG_SOCK"
		as_pg "$PG_BIN/initdb" -D "$PG_DATA" -U postgres -A trust -E UTF8 --no-locale \
			--no-sync --no-instructions </dev/null >"$RUN_DIR/pg-initdb.log" 2>&1 ||
			die "initdb failed; see $RUN_DIR/pg-initdb.log"
		as_pg sh -c 'echo "include_if_exists '\''dev.conf'\''" >>"$1/postgresql.conf"' _ "$PG_DATA"
	fi
	as_pg mkdir -p "$PG_SOCK"
	if pg_running; then
		port=$(sed -n 4p "$PG_DATA/postmaster.pid" 2>/dev/null || true)
		[[ $port =~ ^[0-9]+$ ]] || die "cannot read the port of the running throwaway PostgreSQL from $PG_DATA/postmaster.pid"
		log "PostgreSQL: reusing throwaway instance on 127.0.0.1:$port"
	else
		port=$(free_port "$PG_BASE_PORT")
		# Unix socket paths are limited to 107 bytes; fall back to TCP only.
		local sockdir=$PG_SOCK
		((${#sockdir} + 16 <= 107)) || sockdir=""
		# Rewritten on every start, so a moved checkout or a new port just works.
		as_pg sh -c 'cat >"$1/dev.conf"' _ "$PG_DATA" <<-EOF
			# written by deploy/dev-services.sh: a throwaway server for development
			port = $port
			listen_addresses = '127.0.0.1'
			unix_socket_directories = '$sockdir'
			max_connections = 300
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		EOF
		log "PostgreSQL: starting throwaway instance on 127.0.0.1:$port (data in $PG_DATA)"
		detached as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -l "$PG_HOME/postgres.log" -w -t 60 start ||
			die "PostgreSQL did not start; see $PG_HOME/postgres.log"
	fi
	PG_PORT=$port
	wait_for 30 pg_ok "$(pg_url postgres)" || die "throwaway PostgreSQL does not accept connections on $port: ${PG_ERR:-}; see $PG_HOME/postgres.log"
}

pg_local_stop() {
	if [[ ! -e $PG_LINK ]]; then
		log "PostgreSQL: no throwaway instance"
		return
	fi
	PG_HOME=$(readlink -f "$PG_LINK")
	PG_DATA=$PG_HOME/data
	if [[ ! -s $PG_DATA/PG_VERSION ]]; then
		log "PostgreSQL: no throwaway instance"
		return
	fi
	PG_BIN=$(pg_bindir "$(<"$PG_DATA/PG_VERSION")") || die "PostgreSQL $(<"$PG_DATA/PG_VERSION") binaries not found"
	if ! pg_running; then
		log "PostgreSQL: throwaway instance not running"
		return
	fi
	log "PostgreSQL: stopping throwaway instance"
	as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m fast -w -t 30 stop </dev/null >&2 ||
		as_pg "$PG_BIN/pg_ctl" -D "$PG_DATA" -m immediate -w -t 30 stop </dev/null >&2
}

# pg_url DB: the URL of database DB on the chosen local server (PG_PORT).
pg_url() { echo "postgres://postgres@127.0.0.1:$PG_PORT/$1?sslmode=disable"; }

# ensure_db ADMIN_URL NAME: create database NAME unless it exists.
ensure_db() {
	local admin=$1 db=$2 out
	[[ $db == postgres ]] && return
	have psql || need_packages postgresql-client
	out=$(PGCONNECT_TIMEOUT=$PG_PROBE_TIMEOUT timeout 30 \
		psql "$admin" -Xq -v ON_ERROR_STOP=1 -c "CREATE DATABASE \"$db\"" 2>&1) && {
		log "PostgreSQL: created database $db"
		return
	}
	grep -q 'already exists' <<<"$out" || die "cannot create database $db: $out"
	log "PostgreSQL: database $db exists, using it"
}

# ---------------------------------------------------------------- commands

# check_explicit: every URL set in the environment must answer; report all
# that do not, then fail.
check_explicit() {
	local bad=0 fix="start it, fix the variable, or unset it to use a local server"
	if [[ -n ${REDIS_URL:-} ]]; then
		if redis_ok "$REDIS_URL"; then
			log "Redis: using REDIS_URL $(redact "$REDIS_URL")"
		else
			log "error: REDIS_URL is set to $(redact "$REDIS_URL") but no Redis answers there ($fix)"
			bad=1
		fi
	fi
	if [[ -n ${DATABASE_URL:-} ]]; then
		if pg_ok "$DATABASE_URL"; then
			log "PostgreSQL: using DATABASE_URL $(redact "$DATABASE_URL")"
		else
			log "error: DATABASE_URL is set to $(redact "$DATABASE_URL") but PostgreSQL does not accept it ($fix)${PG_ERR:+:}"
			local line
			while IFS= read -r line; do [[ -z $line ]] || log "    $line"; done <<<"${PG_ERR:-}"
			bad=1
		fi
	fi
	((bad == 0)) || exit 1
}

resolve_redis() {
	[[ -z ${REDIS_URL:-} ]] || return 0
	if [[ ${WR_DEV_FORCE_LOCAL:-} != 1 ]] && redis_ok redis://127.0.0.1:6379/0; then
		log "Redis: using the one running on 127.0.0.1:6379"
		REDIS_URL=redis://127.0.0.1:6379/0
		return
	fi
	redis_local_up
}

resolve_pg() {
	local db=$1
	[[ -z ${DATABASE_URL:-} ]] || return 0
	PG_PORT=5432
	if [[ ${WR_DEV_FORCE_LOCAL:-} != 1 ]] && pg_ok "$(pg_url postgres)"; then
		log "PostgreSQL: DATABASE_URL is unset: using the one running on 127.0.0.1:5432, database $db (set DATABASE_URL to use another)"
	else
		if [[ ${WR_DEV_FORCE_LOCAL:-} != 1 ]] && tcp_open 127.0.0.1 5432; then
			log "PostgreSQL: 127.0.0.1:5432 does not accept user postgres without a password${PG_ERR:+ ($PG_ERR)}; using a throwaway one"
		fi
		pg_local_up
	fi
	ensure_db "$(pg_url postgres)" "$db"
	DATABASE_URL=$(pg_url "$db")
}

cmd_up() {
	local db=$1
	check_explicit
	resolve_redis
	[[ -z $db ]] || resolve_pg "$db" # --no-db: Redis alone
}

cmd_status() {
	local pid
	if pid=$(redis_pid); then
		log "Redis: throwaway instance running (pid $pid, port $(cat "$REDIS_DIR/port" 2>/dev/null))"
	else
		log "Redis: no throwaway instance running"
	fi
	if [[ -s $PG_LINK/data/PG_VERSION ]]; then
		PG_DATA=$(readlink -f "$PG_LINK")/data
		PG_BIN=$(pg_bindir "$(<"$PG_DATA/PG_VERSION")") || PG_BIN=""
		if [[ -n $PG_BIN ]] && pg_running; then
			log "PostgreSQL: throwaway instance running (port $(sed -n 4p "$PG_DATA/postmaster.pid"))"
			return
		fi
	fi
	log "PostgreSQL: no throwaway instance running"
}

usage() {
	cat >&2 <<-EOF
		usage: $0 [up] [--db NAME]   print export lines for REDIS_URL and DATABASE_URL
		       $0 up --no-db         Redis alone (DATABASE_URL only when set, checked)
		       $0 stop               stop the throwaway instances started under .run/
		       $0 status             tell what runs (stderr)
	EOF
	exit 2
}

main() {
	local cmd=up db=waitingroom
	while (($#)); do
		case $1 in
		up | stop | status) cmd=$1 ;;
		--db)
			(($# >= 2)) || usage
			db=$2
			shift
			;;
		--db=*) db=${1#--db=} ;;
		--no-db) db="" ;;
		-h | --help) usage ;;
		*) usage ;;
		esac
		shift
	done
	[[ -z $db || $db =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || die "bad database name: $db"
	case $cmd in
	up) cmd_up "$db" ;;
	stop)
		redis_local_stop
		pg_local_stop
		;;
	status) cmd_status ;;
	esac
	CMD=$cmd
}

# Everything main and the programs it starts write goes to stderr. (The caller's
# stdout is kept aside by bash with close-on-exec, so daemons started here never
# hold a `$(...)` pipe open.) Only the export lines below reach stdout.
CMD=""
main "$@" >&2
if [[ $CMD == up ]]; then
	printf 'export REDIS_URL=%s\n' "$(shquote "$REDIS_URL")"
	[[ -z ${DATABASE_URL:-} ]] || printf 'export DATABASE_URL=%s\n' "$(shquote "$DATABASE_URL")"
fi
