# lib.sh: what the cli tests share. Sourced, not run.
#
# Environment (set by tests/cli/meson.build):
#   STATECTL          the statectl binary under test
#   STATEFS_TEST_MODE plain | encrypted (default encrypted): a SQLite store;
#                     postgres | postgres-plain: a store in a schema of its
#                     own on the server STATEFS_TEST_PG names (exit 77
#                     without one), dropped at the end
# Gives each test a scratch HOME (so the default store and key file live
# there, never in the real home), removed on exit, where every process the
# test started is SIGKILLed too, whatever ended it (tests/reap.sh), and:
#   sc ARGS...            statectl on the test store ($DB) with the mode's key
#   $hkey                 the helper's key argument for $DB (- when plain)
#   expect_exit N CMD...  runs CMD, fails unless it exits N; its stdout is in
#                         $out, its stderr in $err
#   expect_eq GOT WANT WHAT
#   fail MESSAGE
#   now_ns                the time in ns since the epoch (the leases' clock)
#   expect_exit_into N FILE CMD...  expect_exit with CMD's stdout going to
#                         FILE (/dev/full: a full disk), or with FILE
#                         "pipe-gone" into a pipe whose reader has gone
#                         (before CMD starts: SIGPIPE or EPIPE at its first
#                         write, under any schedule)
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/../reap.sh"

: "${STATECTL:?STATECTL must name the statectl binary}"
mode=${STATEFS_TEST_MODE:-encrypted}
pg=
case $mode in
plain|encrypted) ;;
postgres|postgres-plain)
	if [ -z "${STATEFS_TEST_PG:-}" ]; then
		echo "no PostgreSQL server (STATEFS_TEST_PG): skipped"
		exit 77
	fi
	pg=1 ;;
*) echo "unknown STATEFS_TEST_MODE '$mode'" >&2; exit 1 ;;
esac

T=$(mktemp -d "${TMPDIR:-/tmp}/statectl-test.XXXXXX")
cleanup_hooks=()
cleanup() {
	local rc=$? h
	reap_all "$T/"
	for h in "${cleanup_hooks[@]}"; do eval "$h" || true; done
	if [ -n "$pg" ]; then
		psql -X -q "$STATEFS_TEST_PG" -c "SET client_min_messages = warning;
		  DROP SCHEMA IF EXISTS $schema CASCADE" >/dev/null 2>&1
	fi
	rm -rf "$T"
	exit $rc
}
trap cleanup EXIT
reap_traps
export HOME=$T/home XDG_STATE_HOME=$T/home/.local/state \
	XDG_CONFIG_HOME=$T/home/.config
mkdir -p "$HOME"
nap_fifo=$T/.nap
mkfifo "$nap_fifo"
watch_deadline "$T/"   # a hang reports where it waits (tests/reap.sh)
unset STATEFS_DB STATEFS_KEY STATEFS_KEY_FILE

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

# Waits (60 s: a hang, not a slow machine) until process PID sleeps in a
# kernel function matching GLOB (its /proc/PID/wchan: *pipe_write for a
# full pipe, hrtimer_nanosleep for a sleep). Returns 1 if it never did.
wait_wchan() { # PID GLOB
	local w
	for _ in $(seq 1200); do
		{ w=$(<"/proc/$1/wchan"); } 2>/dev/null || w=
		# shellcheck disable=SC2053 # GLOB is a pattern
		[[ $w == $2 ]] && return 0
		nap 0.05
	done
	return 1
}

# Runs CMD... in the background with its stdout on a pipe of one page
# that nobody reads (a stalled ssh, a paused pager; perl sets it up, and
# the command holds the read end itself) and its stderr into ERRFILE, and
# waits until it blocks writing: full_pid is its pid.
on_full_pipe() { # ERRFILE CMD...
	local errf=$1
	shift
	perl -e '$^F = 255; pipe(R, W) or die "pipe: $!"; fcntl(W, 1031, 4096) or
		die "F_SETPIPE_SZ: $!"; open(STDOUT, ">&W") or die; exec @ARGV or
		die "exec: $!"' -- "$@" 2>"$errf" &
	full_pid=$!
	wait_wchan "$full_pid" '*pipe_write' || fail "never filled the pipe: $*"
}

# The test store and how to open it, by mode; hkey is the key argument of
# the engine helper ($HELPER): the key file, or - for a plaintext store.
DB=$T/store.db
KEY=$T/key
if [ -n "$pg" ]; then
	schema=c$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')
	DB="$STATEFS_TEST_PG schema=$schema"
fi
if [ "$mode" = plain ] || [ "$mode" = postgres-plain ]; then
	modeopts=(--plaintext)
	hkey=-
else
	modeopts=(--key-file "$KEY")
	hkey=$KEY
fi

sc() {
	"$STATECTL" --db "$DB" "${modeopts[@]}" "$@"
}

# Creates the test store (and in encrypted mode its key file).
make_store() {
	"$STATECTL" --db "$DB" "${modeopts[@]}" init >/dev/null
}

out= err=
expect_exit() {
	local want=$1 got=0
	shift
	"$@" >"$T/.out" 2>"$T/.err" || got=$?
	# $(<FILE), not $(cat FILE): the same text, without two processes
	# per check (a tenth of the admin script's time)
	out=$(<"$T/.out") err=$(<"$T/.err")
	if [ "$got" -ne "$want" ]; then
		echo "command: $*" >&2
		echo "stdout: $out" >&2
		echo "stderr: $err" >&2
		fail "exit $got, wanted $want"
	fi
}

expect_exit_into() { # N FILE CMD...
	local want=$1 into=$2 got=0
	shift 2
	if [ "$into" = pipe-gone ]; then
		rm -f "$T/.pipe"
		mkfifo "$T/.pipe"
		# a reader (read-write) so that opening the write end does not
		# wait, then no reader at all
		exec 7<>"$T/.pipe" 6>"$T/.pipe" 7<&-
		"$@" >&6 2>"$T/.err" || got=$?
		exec 6>&-
	else
		"$@" >"$into" 2>"$T/.err" || got=$?
	fi
	out= err=$(<"$T/.err")
	if [ "$got" -ne "$want" ]; then
		echo "command: $* > $into" >&2
		echo "stderr: $err" >&2
		fail "exit $got, wanted $want"
	fi
}

expect_eq() {
	if [ "$1" != "$2" ]; then
		printf 'got:  %q\nwant: %q\n' "$1" "$2" >&2
		fail "$3"
	fi
}

expect_match() { # TEXT REGEX WHAT
	if ! [[ $1 =~ $2 ]]; then
		printf 'got:  %q\nwant: /%s/\n' "$1" "$2" >&2
		fail "$3"
	fi
}

# jq over a string, exiting nonzero (with -e) when the filter is false.
jqe() { # JSON FILTER
	printf '%s' "$1" | jq -e "$2" >/dev/null || {
		echo "json: $1" >&2
		fail "jq '$2' is false"
	}
}

now_ns() {
	local t=${EPOCHREALTIME/[.,]/}
	echo $((t * 1000))
}

# In the sanitizer build a host that is not ours (the sqlite3 shell) needs
# the sanitizer's runtime loaded first to load our extension; the host's
# own leaks are not ours to check. Puts such a wrapper first on PATH.
sanitized_host() { # PROGRAM
	[ -n "${STATEFS_TEST_PRELOAD:-}" ] || return 0
	mkdir -p "$T/bin"
	printf '#!/bin/sh\nLD_PRELOAD=%s ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 exec %s "$@"\n' \
		"$STATEFS_TEST_PRELOAD" "$(command -v "$1")" >"$T/bin/$1"
	chmod +x "$T/bin/$1"
	PATH=$T/bin:$PATH
}
