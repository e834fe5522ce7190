#!/usr/bin/env bash
# dev-test.sh: what `make test` and `make test-short` run.
#
# Usage:
#   deploy/dev-test.sh            every check and every test, with -race (CI)
#   deploy/dev-test.sh --short    go test -short: no browser, no extra
#                                 processes, no package installs (a minute)
#
# Phases, each timed (the times are printed at the end, also on failure):
#   services  Redis and PostgreSQL from deploy/dev-services.sh (--db postgres:
#             each test makes a fresh database of its own)
#   compiler  gcc when missing (go test -race needs cgo)
#   tools     what the tests need and the machine lacks, installed with
#             apt-get --no-install-recommends when running as root, in the
#             background while vet compiles: chromium (page tests),
#             prometheus (its promtool checks the alert rules), nodejs and
#             npm (the Express origin of the gateway's route tests, npm ci
#             from its lock file), nginx and caddy (the forward-auth tests
#             run deploy/forward-auth's configurations through them;
#             Debian's nginx has the auth_request module built in, which
#             is checked); its time is the download's, beside vet's
#   vet (with -race, as the tests build; beside it the command built as
#             the smoke tests build it, see vet_full), gofmt, tree (no
#             binary in git ls-files)
#   test      go test -race -count=1 -vet=off ./... (vet ran every analyzer
#             on every package, its tests included, in the vet phase: the
#             subset go test runs again would be analysed a second time on
#             a cold cache); four packages at a time (go test's -p,
#             WR_TEST_PACKAGES: most packages' tests wait on Redis, timers
#             or a child process, and with one per core the cores idled
#             half the phase), tests marked parallel four at a time
#             (WR_TEST_PARALLEL), and each package's binary has its own
#             -timeout (WR_TEST_TIMEOUT, 20m)
#
# Any failing phase fails the run: nothing here retries or skips a failure.
# (A phase runs as `"$@" || rc=$?`, where bash ignores set -e: each phase's
# function returns its first failure itself.)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
short=0
[[ ${1:-} == --short ]] && short=1

started=$SECONDS
times=()
phase() {
	local name=$1 t=$SECONDS rc=0
	shift
	echo "==> $name"
	"$@" || rc=$?
	times+=("$(printf '%-10s %5ds%s' "$name" $((SECONDS - t)) "$( ((rc == 0)) || echo " (failed)")")")
	return "$rc"
}
report() {
	local rc=$?
	echo "==> phase times"
	((${#times[@]})) && printf '    %s\n' "${times[@]}"
	printf '    %-10s %5ds%s\n' total $((SECONDS - started)) "$( ((rc == 0)) || echo " (failed, exit $rc)")"
	[[ -z ${command_dir:-} ]] || rm -rf "$command_dir"
}
trap report EXIT

services() {
	local svc
	svc="$(deploy/dev-services.sh up --db postgres)" || return
	eval "$svc"
	export WR_TEST_REDIS_URL="$REDIS_URL" WR_TEST_DATABASE_URL="$DATABASE_URL"
}

# compiler: gcc for go test -race (cgo), before vet builds with -race.
compiler() {
	command -v "$($GO env CC)" >/dev/null || install gcc libc6-dev
}

# tools: what only the tests use; it runs beside vet, which compiles (CPU)
# while this downloads and unpacks (network and disk).
tools() {
	local missing=()
	[[ -x /usr/bin/chromium ]] || missing+=(chromium)
	command -v promtool >/dev/null || missing+=(prometheus)
	command -v npm >/dev/null || missing+=(nodejs npm)
	# nginx is in /usr/sbin, off a normal user's PATH.
	[[ -x /usr/sbin/nginx ]] || command -v nginx >/dev/null || missing+=(nginx)
	command -v caddy >/dev/null || missing+=(caddy)
	# The route fuzzer's origins (loadtest/fuzzroutes/origins) run on
	# Debian's Python (/usr/bin/python3, whatever python3 is on PATH), Ruby
	# and PHP.
	/usr/bin/python3 -c 'import flask' 2>/dev/null || missing+=(python3-flask)
	/usr/bin/python3 -c 'import django' 2>/dev/null || missing+=(python3-django)
	ruby -e 'require "sinatra/base"' 2>/dev/null || missing+=(ruby-sinatra)
	command -v php >/dev/null || missing+=(php-cli)
	if ((${#missing[@]})); then install "${missing[@]}" || return; fi
	# The forward-auth configuration needs auth_request, which a build of
	# nginx from elsewhere may lack.
	local nginx
	nginx=$(command -v nginx || echo /usr/sbin/nginx)
	if [[ -x $nginx ]] && ! "$nginx" -V 2>&1 | grep -q -- --with-http_auth_request_module; then
		echo "tools: $nginx has no auth_request module (nginx -V); install Debian's nginx package" >&2
		return 1
	fi
	# The gateway's route tests run a real Express origin (package-lock.json
	# pins it; npm's registry is the one place it comes from).
	local express=cmd/waitingroom/systemtest/gateway/testdata/express-origin
	if [[ ! -d $express/node_modules/express ]] && command -v npm >/dev/null; then
		echo "npm ci --prefix $express"
		npm ci --prefix "$express" --no-audit --no-fund --loglevel=error
	fi
	# The route fuzzer's two Node origins, from their lock files.
	local origin
	for origin in loadtest/fuzzroutes/origins/express loadtest/fuzzroutes/origins/fastify; do
		if [[ ! -d $origin/node_modules/${origin##*/} ]] && command -v npm >/dev/null; then
			echo "npm ci --prefix $origin"
			npm ci --prefix "$origin" --no-audit --no-fund --loglevel=error
		fi
	done
}

install() {
	local missing=("$@")
	if [[ $(id -u) != 0 ]]; then
		echo "warning: ${missing[*]} missing and not root, not installing" \
			"(sudo apt-get install -y --no-install-recommends ${missing[*]}); tests needing them will fail" >&2
		return 0
	fi
	echo "installing ${missing[*]}"
	# From the package lists as they are first: a machine whose lists are
	# current (or that fetched them for gcc a minute ago) need not fetch
	# them again. Empty or stale lists make the install fail; then update.
	apt_install "${missing[@]}" 2>/dev/null && return
	apt-get update -qq || return
	apt_install "${missing[@]}"
}

apt_install() {
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

format() {
	local unformatted
	unformatted="$(find . \( -path ./.git -o -path ./.run -o -path ./bin -o -name vendor -o -name testdata -o -name node_modules \) -prune \
		-o -name '*.go' -print0 | xargs -0 -r gofmt -l)"
	if [[ -n $unformatted ]]; then
		echo "gofmt: these files are not formatted (run gofmt -w on them):" >&2
		echo "$unformatted" >&2
		return 1
	fi
}

# tree: build outputs never enter git (an ELF, or any file git sees as
# binary that is not an image or an HTML report).
tree() {
	local bad=() f
	while IFS= read -r f; do
		case $f in *.png | *.jpg | *.svg | *.ico | *.woff2) continue ;; esac
		[[ -f $f ]] || continue
		if [[ $(head -c 4 "$f" | od -An -tx1 | tr -d ' ') == 7f454c46 ]] || [[ -x $f && $f != *.sh && $(head -c 2 "$f") != '#!' ]]; then
			bad+=("$f")
		fi
	done < <(git ls-files 2>/dev/null)
	if ((${#bad[@]})); then
		echo "tree: build outputs are tracked by git (git rm --cached them): ${bad[*]}" >&2
		return 1
	fi
}

# tools_beside: tools in the background, its output and time kept for
# tools_join, which prints them and fails the run if tools failed.
tools_beside() {
	tools_dir=$(mktemp -d)
	(
		t=$SECONDS rc=0
		tools >"$tools_dir/out" 2>&1 || rc=$?
		printf '%-10s %5ds%s\n' tools $((SECONDS - t)) "$( ((rc == 0)) || echo " (failed)") (beside vet)" >"$tools_dir/time"
		exit "$rc"
	) &
	tools_pid=$!
}
tools_join() {
	local rc=0
	wait "$tools_pid" || rc=$?
	echo "==> tools (ran beside vet)"
	cat "$tools_dir/out"
	times+=("$(cat "$tools_dir/time")")
	rm -rf "$tools_dir"
	return "$rc"
}

# gotest: -parallel lets the long scenarios, which mostly wait on timers,
# run beside each other (systemtest's LongScenario); the browser
# tests keep two slots of their own across the system tests' packages
# whatever -parallel and -p are (systemtest's HoldSlot). Under -short
# the quick tests run side by side too (QuickBeside), and -p 4 lets test
# binaries that wait on Redis run while others link.
gotest() {
	if ((short)); then
		$GO test -short -count=1 -vet=off -p 4 -parallel 4 -timeout 5m ./...
	else
		$GO test -race -count=1 -vet=off -p "${WR_TEST_PACKAGES:-4}" -parallel "${WR_TEST_PARALLEL:-4}" -timeout "${WR_TEST_TIMEOUT:-20m}" ./...
	fi
}

# vet_full: go vet -race, and beside it the command built without the
# race detector, the server the smoke tests of loadtest/ run
# (loadtest/internal/smoke), into a folder of the run's: the test phase
# names it in WR_TEST_COMMAND, so no test binary builds or links it
# again. On a cold cache that build compiles every package a second time,
# without -race; inside the test phase the first smoke test paid it (a
# minute and more of its package's time, on the test phase's longest
# path), while here it fills the gaps where vet's compiles wait on each
# other.
vet_full() {
	local rc=0 build
	$GO build -o "$command_dir/waitingroom" ./cmd/waitingroom &
	build=$!
	$GO vet -race ./... || rc=$?
	wait "$build" || ((rc)) || rc=$?
	return "$rc"
}

phase services services
if ((!short)); then
	phase compiler compiler
	tools_beside
	command_dir=$(mktemp -d) # removed by report
	export WR_TEST_COMMAND="$command_dir/waitingroom"
fi
# vet builds with the tests' flags: under -race the compiled packages it
# type-checks against are the ones go test then reuses (a fresh machine
# compiled every dependency twice, 4 of its 16 minutes).
if ((short)); then
	phase vet $GO vet ./...
else
	phase vet vet_full
fi
phase gofmt format
phase tree tree
((short)) || tools_join
phase test gotest
