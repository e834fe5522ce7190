# Makefile: build, run the demo, and test against real Redis and PostgreSQL.
#
#   make run            build, find or start Redis + Postgres, seed demo data, serve,
#                       reset the demo room and start a crowd of simulated shoppers
#                       (CROWD=0: without it; KEEP_ROOMS=1: keep the room's settings)
#   make run-gateway    the gateway demo: the demo shop as the origin, the waiting
#                       room in front of it on Redis alone, a crowd of anonymous
#                       visitors through it (CROWD=0, KEEP_ROOMS=1 as for run)
#   make test           go vet, gofmt check, go test -race against real services
#   make test-short     go test -short: no browser, no extra processes (about a minute)
#   make bench          Go benchmarks against the same services
#   make bench-http     the HTTP paths against a plain handler and the Redis floor
#                       (loadtest poll --limit) on a server and Redis it starts
#   make loadtest ARGS="..."
#   make image          the container image (Dockerfile) with podman or docker
#   make services-stop  stop the throwaway Redis/Postgres under .run/ (if any)
#
# Services come from deploy/dev-services.sh: REDIS_URL / DATABASE_URL when set,
# else the standard local ports, else throwaway instances under .run/.

SHELL := /bin/bash
# Every recipe line runs as `bash -euo pipefail -c '...'`: the first failing
# command, also inside a pipeline, fails the target.
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := build

GO    ?= go
BIN   := bin/waitingroom
ARGS  ?=
BENCH ?= .

# $(call services,DB): import REDIS_URL and DATABASE_URL (database DB) into the
# recipe's shell. Two steps on purpose: in `eval "$(cmd)"` a failing cmd goes
# unnoticed (eval of nothing succeeds); an assignment keeps cmd's exit status.
services = svc="$$(deploy/dev-services.sh up --db $(1))"; eval "$$svc"

# The test helpers read WR_TEST_*; each test makes its own fresh database, so
# the server's `postgres` database is the one handed to them.
test_env = $(call services,postgres); \
	export WR_TEST_REDIS_URL="$$REDIS_URL" WR_TEST_DATABASE_URL="$$DATABASE_URL"

.PHONY: build run run-gateway test test-short bench bench-http loadtest services services-stop clean image

build:
	$(GO) build -o $(BIN) ./cmd/waitingroom

# make run CROWD=0: without the simulated crowd. make run KEEP_ROOMS=1: keep
# the room settings an earlier run left in Redis (else the demo room is reset).
CROWD      ?= 1
KEEP_ROOMS ?= 0

# run: the server in the background, then (a helper job) the demo room reset
# and the crowd of simulated shoppers (go run ./loadtest crowd -h), each in a
# process group of its own (started under set -m, so the terminal's Ctrl-C
# reaches only this shell): Ctrl-C or SIGTERM stops the crowd first (its
# shoppers leave the queue), then the server; a second Ctrl-C kills both.
# The crowd also stops by itself when the server stops answering. It mints its
# shoppers' access tokens with the server's JWT secret: in WR_DEV, when none
# is set, one made for this run (as the server would make one itself).
run: build
	@$(GO) build -o bin/loadtest ./loadtest; \
	$(call services,waitingroom); \
	export WR_DEV="$${WR_DEV:-1}"; \
	export WR_ADMIN_TOKEN="$${WR_ADMIN_TOKEN:-dev-admin-token-local}"; \
	if [[ -z $${WR_JWT_SECRET:-} && $$WR_DEV != 0 ]]; then \
		export WR_JWT_SECRET="$$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"; \
	fi; \
	echo "==> seeding demo data: 10000 users, 3 products"; \
	$(BIN) seed --users 10000 --password demo-pass --products 3 --stock 1000000; \
	url() { \
		local addr="$$1" host port; \
		port="$${addr##*:}"; host="$${addr%:*}"; \
		[[ $$addr == *:* ]] || host=""; \
		case "$$host" in ""|0.0.0.0|"[::]"|::) host=localhost ;; esac; \
		echo "http://$$host:$$port/"; \
	}; \
	page="$$(url "$${WR_HTTP_ADDR:-:8080}")"; \
	admin="$$(url "$${WR_ADMIN_ADDR:-127.0.0.1:8081}")"; \
	echo; \
	echo "=================================================================="; \
	echo "  Waiting room page:  $$page"; \
	echo "  Demo login:         user1 ... user10000, password demo-pass"; \
	echo "  Management:         $$admin  (metrics, healthz, readyz, admin/rooms)"; \
	echo "  Operator dashboard: $${admin}admin/  (asks for the admin token)"; \
	echo "  Admin token:        $$WR_ADMIN_TOKEN"; \
	echo "                      curl -H 'Authorization: Bearer $$WR_ADMIN_TOKEN' $${admin}admin/rooms"; \
	echo "  Stop with Ctrl-C; Redis/Postgres keep running (make services-stop)."; \
	echo "=================================================================="; \
	echo; \
	mkdir -p .run; log=.run/crowd.log; : >"$$log"; \
	tool=(bin/loadtest --base "$${page%/}" --admin "$${admin%/}"); \
	tool=("$${tool[@]/localhost/127.0.0.1}"); \
	set -m; \
	$(BIN) serve & srv=$$!; helper=""; \
	if [[ "$(KEEP_ROOMS)" != 1 || "$(CROWD)" != 0 ]]; then \
		( \
			if [[ "$(KEEP_ROOMS)" != 1 ]]; then \
				if line="$$("$${tool[0]}" reset-room "$${tool[@]:1}" --wait-ready 60s 2>>"$$log")"; then \
					echo "==> $$line (make run KEEP_ROOMS=1 keeps an earlier run's settings)"; \
				else \
					echo "warning: could not reset room default (see $$log)" >&2; \
				fi; \
			fi; \
			if [[ "$(CROWD)" != 0 ]]; then \
				echo "==> simulated crowd: 300 shoppers kept waiting in room default (users user1001 and up; log $$log); make run CROWD=0 runs without"; \
				exec "$${tool[0]}" crowd "$${tool[@]:1}" --waiting 300 --mint-tokens --wait-ready 60s >>"$$log" 2>&1; \
			fi \
		) & helper=$$!; \
	fi; \
	set +m; \
	stop() { \
		trap 'kill -KILL $$srv $${helper:+-$$helper} 2>/dev/null' INT TERM; \
		if [[ -n $$helper ]] && kill -0 "$$helper" 2>/dev/null; then \
			[[ "$(CROWD)" == 0 ]] || echo "==> stopping the simulated crowd (its shoppers leave the queue), then the server"; \
			kill -INT -- "-$$helper" 2>/dev/null || true; wait "$$helper" || true; \
		fi; \
		kill -TERM "$$srv" 2>/dev/null || true; rc=0; wait "$$srv" || rc=$$?; \
	}; \
	trap 'stop; exit "$$rc"' INT TERM; \
	rc=0; wait "$$srv" || rc=$$?; \
	trap - INT TERM; \
	if [[ -n $$helper ]]; then kill -INT -- "-$$helper" 2>/dev/null || true; wait "$$helper" || true; fi; \
	exit "$$rc"

# run-gateway: the gateway demo, in the processes run has, plus the origin.
# The demo shop (deploy/origin, served by deploy/demo-shop on SHOP_ADDR, from the environment like WR_HTTP_ADDR, every
# request it gets logged in .run/shop.log) is the origin; the waiting room runs
# in gateway mode in front of it on Redis alone (Postgres only when DATABASE_URL
# is set: then room definitions are recorded there), protecting GET /checkout/*
# with room sale; the crowd (go run ./loadtest crowd -h, --gateway) is anonymous
# visitors who enter under /_wr/ and, once admitted, GET /checkout/. No demo
# users, no seed, no login. Ctrl-C stops the crowd, then the server, then the
# shop. The proof of work is off unless WR_GATEWAY_CHALLENGE=pow (the crowd
# solves it too, at a CPU cost the demo machine may not want); the limit on new
# places per network is raised, as the whole crowd comes from 127.1.0.0/23 while
# a real one comes from many networks.
SHOP_ADDR ?= 127.0.0.1:8090
run-gateway: build
	@$(GO) build -o bin/loadtest ./loadtest; \
	$(GO) build -o bin/demo-shop ./deploy/demo-shop; \
	svc="$$(deploy/dev-services.sh up --no-db)"; eval "$$svc"; \
	export WR_DEV="$${WR_DEV:-1}"; \
	export WR_ADMIN_TOKEN="$${WR_ADMIN_TOKEN:-dev-admin-token-local}"; \
	export WR_UPSTREAM="http://$(SHOP_ADDR)" WR_ROOMS=sale WR_PROTECT="GET /checkout/*=sale"; \
	export WR_GATEWAY_CHALLENGE="$${WR_GATEWAY_CHALLENGE:-off}"; \
	export WR_LIMIT_ENTER_NEW_NET="$${WR_LIMIT_ENTER_NEW_NET:-6000/1m:600}"; \
	url() { \
		local addr="$$1" host port; \
		port="$${addr##*:}"; host="$${addr%:*}"; \
		[[ $$addr == *:* ]] || host=""; \
		case "$$host" in ""|0.0.0.0|"[::]"|::) host=localhost ;; esac; \
		echo "http://$$host:$$port/"; \
	}; \
	page="$$(url "$${WR_HTTP_ADDR:-:8080}")"; \
	admin="$$(url "$${WR_ADMIN_ADDR:-127.0.0.1:8081}")"; \
	postgres="none: Redis alone (rooms made through the admin API are not recorded)"; \
	[[ -z $${DATABASE_URL:-} ]] || postgres="DATABASE_URL (room definitions recorded there)"; \
	mkdir -p .run; log=.run/crowd.log; shoplog=.run/shop.log; : >"$$log"; : >"$$shoplog"; \
	echo; \
	echo "=================================================================="; \
	echo "  The shop, through the gateway: $$page  (the origin, $$WR_UPSTREAM)"; \
	echo "  Its checkout, protected:       $${page}checkout/  (queues you in room sale)"; \
	echo "  Waiting-room page and API:     $${page}_wr/rooms/sale  and  $${page}_wr/api/v1/"; \
	echo "  What reached the shop:         $$shoplog  (one line a request, with or without a pass)"; \
	echo "  Management:                    $$admin  (metrics, healthz, readyz, admin/rooms)"; \
	echo "  Operator dashboard:            $${admin}admin/  (asks for the admin token)"; \
	echo "  Admin token:                   $$WR_ADMIN_TOKEN"; \
	echo "  Postgres:                      $$postgres"; \
	echo "  Stop with Ctrl-C; Redis keeps running (make services-stop)."; \
	echo "=================================================================="; \
	echo; \
	tool=(bin/loadtest --base "$${page%/}" --admin "$${admin%/}" --room sale); \
	tool=("$${tool[@]/localhost/127.0.0.1}"); \
	set -m; \
	bin/demo-shop --listen "$(SHOP_ADDR)" --dir deploy/origin --log "$$shoplog" & shop=$$!; \
	$(BIN) serve & srv=$$!; helper=""; \
	if [[ "$(KEEP_ROOMS)" != 1 || "$(CROWD)" != 0 ]]; then \
		( \
			if [[ "$(KEEP_ROOMS)" != 1 ]]; then \
				if line="$$("$${tool[0]}" reset-room "$${tool[@]:1}" --wait-ready 60s 2>>"$$log")"; then \
					echo "==> $$line (make run-gateway KEEP_ROOMS=1 keeps an earlier run's settings)"; \
				else \
					echo "warning: could not reset room sale (see $$log)" >&2; \
				fi; \
			fi; \
			kill -0 "$$srv" 2>/dev/null || exit 0; \
			if [[ "$(CROWD)" != 0 ]]; then \
				echo "==> simulated crowd: 300 anonymous visitors kept waiting in room sale, each admitted one then GETs /checkout/ (log $$log); make run-gateway CROWD=0 runs without"; \
				exec "$${tool[0]}" crowd "$${tool[@]:1}" --gateway "GET /checkout/" --waiting 300 --wait-ready 60s >>"$$log" 2>&1; \
			fi \
		) & helper=$$!; \
	fi; \
	set +m; \
	stop() { \
		trap 'kill -KILL $$srv $$shop $${helper:+-$$helper} 2>/dev/null' INT TERM; \
		if [[ -n $$helper ]] && kill -0 "$$helper" 2>/dev/null; then \
			[[ "$(CROWD)" == 0 ]] || echo "==> stopping the simulated crowd (its visitors leave the queue), then the server and the shop"; \
			kill -INT -- "-$$helper" 2>/dev/null || true; wait "$$helper" || true; \
		fi; \
		kill -TERM "$$srv" 2>/dev/null || true; rc=0; wait "$$srv" || rc=$$?; \
		kill -TERM "$$shop" 2>/dev/null || true; wait "$$shop" || true; \
	}; \
	trap 'stop; exit "$$rc"' INT TERM; \
	rc=0; wait "$$srv" || rc=$$?; \
	trap - INT TERM; \
	if [[ -n $$helper ]]; then kill -INT -- "-$$helper" 2>/dev/null || true; wait "$$helper" || true; fi; \
	kill -TERM "$$shop" 2>/dev/null || true; wait "$$shop" || true; \
	exit "$$rc"

# test: everything CI runs (deploy/dev-test.sh says what, and times each
# phase); test-short: the developer's loop, no browser or extra processes.
test:
	@GO=$(GO) deploy/dev-test.sh

test-short:
	@GO=$(GO) deploy/dev-test.sh --short

bench:
	@$(test_env); \
	$(GO) test -run '^$$' -bench '$(BENCH)' -benchmem ./...

loadtest:
	$(GO) run ./loadtest $(ARGS)

# bench-http: the limit of the HTTP paths on this machine (go run ./loadtest
# poll -h, --limit): a plain Fiber handler, the same making one EVALSHA on
# the server's Redis, enter and the poll at the front, one after another at
# 64 connections, each path as a ratio to both. It starts a Redis of its own
# (so that Redis's counters are the run's alone) and the server on it with
# the limits off and no cap per address, on BENCH_* addresses, then stops
# both; the database is the demo's (enter and poll read none of it).
# BENCH_ARGS adds flags, e.g. BENCH_ARGS="--duration 5s --cpu-profile enter.pprof".
# The ports are below the kernel's ephemeral range (32768 and up), which any
# outgoing connection of the machine may hold for a moment.
BENCH_REDIS_PORT ?= 6491
BENCH_HTTP_ADDR  ?= 127.0.0.1:28491
BENCH_ADMIN_ADDR ?= 127.0.0.1:28492
BENCH_ARGS       ?=
bench-http: build
	@$(GO) build -o bin/loadtest ./loadtest; \
	$(call services,waitingroom); \
	command -v redis-server >/dev/null || { echo "make bench-http: redis-server is not installed (apt-get install redis-server)" >&2; exit 1; }; \
	busy() { (exec 3<>"/dev/tcp/$${1%:*}/$${1##*:}") 2>/dev/null; }; \
	for a in 127.0.0.1:$(BENCH_REDIS_PORT) $(BENCH_HTTP_ADDR) $(BENCH_ADMIN_ADDR); do \
		! busy "$$a" || { echo "make bench-http: something already listens on $$a (set BENCH_REDIS_PORT, BENCH_HTTP_ADDR, BENCH_ADMIN_ADDR)" >&2; exit 1; }; \
	done; \
	dir="$$(mktemp -d)"; \
	redis_url="redis://127.0.0.1:$(BENCH_REDIS_PORT)/0"; \
	redis-server --bind 127.0.0.1 --port $(BENCH_REDIS_PORT) --save "" --appendonly no --dir "$$dir" >"$$dir/redis.log" 2>&1 & rds=$$!; \
	srv=""; \
	cleanup() { \
		[[ -z $$srv ]] || { kill -TERM "$$srv" 2>/dev/null || true; wait "$$srv" || true; }; \
		kill -TERM "$$rds" 2>/dev/null || true; wait "$$rds" || true; \
		rm -rf "$$dir"; \
	}; \
	trap cleanup EXIT; \
	for _ in $$(seq 100); do redis-cli -p $(BENCH_REDIS_PORT) ping >/dev/null 2>&1 && break; sleep 0.1; done; \
	redis-cli -p $(BENCH_REDIS_PORT) ping >/dev/null || { cat "$$dir/redis.log" >&2; exit 1; }; \
	export WR_JWT_SECRET="$$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')"; \
	export WR_ADMIN_TOKEN="$$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; \
	REDIS_URL="$$redis_url" WR_HTTP_ADDR=$(BENCH_HTTP_ADDR) WR_ADMIN_ADDR=$(BENCH_ADMIN_ADDR) \
		WR_RATE_LIMITS=off WR_MAX_CONNS_PER_IP=100000 WR_LOG_LEVEL=warn \
		$(BIN) serve >"$$dir/server.log" 2>&1 & srv=$$!; \
	bin/loadtest reset-room --base http://$(BENCH_HTTP_ADDR) --admin http://$(BENCH_ADMIN_ADDR) --wait-ready 60s >/dev/null \
		&& kill -0 "$$srv" 2>/dev/null || { cat "$$dir/server.log" >&2; exit 1; }; \
	bin/loadtest poll --base http://$(BENCH_HTTP_ADDR) --admin http://$(BENCH_ADMIN_ADDR) --redis "$$redis_url" \
		--limit --mint-tokens --conns 64 --enter-users 400000 $(BENCH_ARGS)

# image: the container image (Dockerfile) with podman, else docker: the first
# whose `info` answers (docker's needs its daemon; podman needs none). The
# Dockerfile's RUN --mount needs BuildKit: docker gets DOCKER_BUILDKIT=1, and
# from docker 23 on that needs the buildx plugin. What is missing is said in
# one line, instead of the engine's own errors.
IMAGE ?= waitingroom:latest
image:
	@engine=""; why=(); \
	for e in podman docker; do \
		command -v "$$e" >/dev/null || continue; \
		if timeout 10 "$$e" info >/dev/null 2>&1; then engine=$$e; break; fi; \
		case $$e in \
			docker) why+=("docker is installed but no daemon answers (docker info fails; start it: systemctl start docker)") ;; \
			*) why+=("$$e is installed but \`$$e info\` fails (run it to see why)") ;; \
		esac; \
	done; \
	if [[ -z $$engine ]]; then \
		(( $${#why[@]} )) || why=("neither podman nor docker is installed"); \
		msg="$$(printf '%s; ' "$${why[@]}")"; \
		echo "make image: $${msg%; }; podman needs no daemon: apt-get install -y podman" >&2; \
		exit 1; \
	fi; \
	if [[ $$engine == docker ]] && ! docker buildx version >/dev/null 2>&1; then \
		v="$$(docker version --format '{{.Client.Version}}' 2>/dev/null || true)"; \
		if ! [[ $${v%%.*} =~ ^[0-9]+$$ ]] || (( $${v%%.*} >= 23 )); then \
			echo "make image: docker $${v:-?} has no BuildKit (the buildx plugin, docker-buildx-plugin), which the Dockerfile's RUN --mount needs; install it, or podman" >&2; \
			exit 1; \
		fi; \
	fi; \
	echo "==> $$engine build -t $(IMAGE) ."; \
	DOCKER_BUILDKIT=1 "$$engine" build -t "$(IMAGE)" .

# Print the export lines, for a shell: eval "$(make -s services)"
services:
	@deploy/dev-services.sh up --db waitingroom

services-stop:
	@deploy/dev-services.sh stop

clean:
	rm -rf bin
