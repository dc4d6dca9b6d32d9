#!/usr/bin/env bash
# cli_install.sh: `meson install --destdir` puts every artefact in place
# (statectl, the daemon, the library with its header and pkg-config file,
# the man pages, bash completion, the systemd user units); the installed
# header and library build a program; statefs-demo (the README's
# embedding example) runs and leaves nothing; the man pages render without
# warnings; the systemd units parse and the installed unit's command
# mounts the default store (SIGTERM unmounts, exit 0), the names it
# lists paste into statectl and back, and statefs(1)'s EXAMPLES run on
# it as a user copies them; scripts/setup run again (its installing steps
# stubbed) leaves a live mount, mounts it again after installing another
# statefs (not while in use), mounts the store again over a dead one and
# refuses another file system; the installed
# completion completes commands, options and names from the store.
# Usage: cli_install.sh BUILD_ROOT SOURCE_ROOT
# Environment: see lib.sh. Exit: 0 pass, 1 fail.
. "$(dirname "$0")/lib.sh"
build=$1 src=$2

opt() { meson introspect --buildoptions "$build" | jq -r ".[] | select(.name == \"$1\") | .value"; }
prefix=$(opt prefix) bindir=$(opt bindir) libdir=$(opt libdir)
includedir=$(opt includedir) mandir=$(opt mandir) datadir=$(opt datadir)
abs() { case $1 in /*) echo "$1" ;; *) echo "$prefix/$1" ;; esac; }
D=$T/dest
meson install -C "$build" --destdir "$D" --no-rebuild --quiet >"$T/install.log" 2>&1 ||
	{ cat "$T/install.log" >&2; fail "meson install failed"; }

want() { [ -e "$D$1" ] || { find "$D" -type f >&2; fail "not installed: $1"; }; }
want "$(abs "$bindir")/statectl"
# the daemon, as soon as the build has one
if [ -e "$build/mountd/statefs" ]; then
	want "$(abs "$bindir")/statefs"
fi
want "$(abs "$includedir")/statefs.h"
ls "$D$(abs "$libdir")"/libstatefs.so.0* >/dev/null 2>&1 || fail "not installed: libstatefs.so.0"
want "$(abs "$libdir")/libstatefs.so"
want "$(abs "$libdir")/libstatefs_sqlite.so"
pc=$D$(abs "$libdir")/pkgconfig/statefs.pc
want "$(abs "$libdir")/pkgconfig/statefs.pc"
want "$(abs "$mandir")/man1/statectl.1"
want "$(abs "$mandir")/man1/statefs.1"
comp=$(find "$D" -path '*bash-completion/completions/statectl' | sed -n 1p)
[ -n "$comp" ] || fail "bash completion not installed"
units=$(find "$D" -path '*systemd/user/statefs@.service' | sed -n 1p)
[ -n "$units" ] || fail "systemd user unit template not installed"
[ -e "$(dirname "$units")/statefs.service" ] || fail "statefs.service not installed"
grep -q "^ExecStart=$(abs "$bindir")/statefs -f %f$" "$units" || fail "the unit runs the installed daemon"

# the installed header, library and pkg-config file build a program
cat >"$T/use.c" <<'EOF'
#include <statefs.h>
#include <stdio.h>
int main(void)
{
	sfs_config o = { .db = ":memory:", .flags = SFS_OPEN_CREATE | SFS_OPEN_PLAINTEXT };
	sfs_store *s;
	int64_t v = 0;
	if (sfs_store_open(&o, &s, NULL) || sfs_counter_add(s, sfs_str("a"), sfs_str("b"), sfs_str("c"), 41, &v) ||
	    sfs_counter_add(s, sfs_str("a"), sfs_str("b"), sfs_str("c"), 1, &v))
		return 1;
	printf("%lld\n", (long long)v);
	sfs_store_close(s);
	return 0;
}
EOF
flags=$(PKG_CONFIG_SYSROOT_DIR=$D PKG_CONFIG_PATH=$(dirname "$pc") pkg-config --cflags --libs statefs) ||
	fail "pkg-config cannot read statefs.pc"
san=$(opt b_sanitize)   # a sanitized library needs a sanitized program
[ "$san" = none ] || [ -z "$san" ] || flags="$flags -fsanitize=$san"
cc -o "$T/use" "$T/use.c" $flags || fail "a program does not build against the installed files"
expect_eq "$(LD_LIBRARY_PATH=$D$(abs "$libdir") "$T/use")" 42 "the installed library works"
# the installed library exports exactly the functions the installed header
# declares: before core/libstatefs.map named them, its sfs_* pattern let
# out private ones (sfs_err, sfs_log, sfs_clock_set), and a program with a
# function of one of those names took the library's own calls to it
want=$(grep -oE '^[a-z][a-z0-9_ ]*[ *]sfs_[a-z0-9_]+\(' "$D$(abs "$includedir")/statefs.h" |
	grep -v '^static' | grep -oE 'sfs_[a-z0-9_]+' | sort)
got=$(nm -D --defined-only "$D$(abs "$libdir")/libstatefs.so" |
	awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' | sort)
[ "$(wc -l <<<"$want")" -gt 80 ] || fail "the header's functions were not found in statefs.h"
[ "$got" = "$want" ] || { diff <(echo "$want") <(echo "$got") >&2
	fail "the library's exports are not the header's functions (< header, > library)"; }
# and a C++ program, strictly (statefs.h is extern "C" for it): SFS_NONE
# was a compound literal, which ISO C++ forbids, so -pedantic-errors
# refused every use of it
if command -v c++ >/dev/null; then
	cat >"$T/use.cc" <<'EOF'
#include <statefs.h>
#include <cstdio>
int main()
{
	sfs_config o = sfs_config();
	sfs_store *s;
	sfs_list l;
	o.db = ":memory:";
	o.flags = SFS_OPEN_CREATE | SFS_OPEN_PLAINTEXT;
	if (sfs_store_open(&o, &s, NULL) ||
	    sfs_kv_put(s, sfs_str("a"), sfs_str("b"), sfs_str("c"), sfs_bytes("v", 1)) ||
	    sfs_dir_list(s, SFS_FAM_KV, SFS_NONE, SFS_NONE, SFS_NONE, 0, &l))
		return 1;
	std::printf("%zu\n", l.n);
	sfs_list_free(&l);
	sfs_store_close(s);
	return 0;
}
EOF
	c++ -std=c++11 -Wall -Wextra -pedantic-errors -Werror -o "$T/usecc" "$T/use.cc" $flags ||
		fail "a C++ program does not build against the installed header"
	expect_eq "$(LD_LIBRARY_PATH=$D$(abs "$libdir") "$T/usecc")" 1 "the installed library works from C++"
fi
# the installed statectl runs against the installed library
expect_eq "$(LD_LIBRARY_PATH=$D$(abs "$libdir") "$D$(abs "$bindir")/statectl" --version)" "statectl $(meson introspect --projectinfo "$build" | jq -r .version)" "installed statectl runs"

# the README's example of embedding the engine works and removes every
# file of its scratch store (it left the store's -reserve, 1 MiB, and its
# directory in /tmp at every run)
if [ -x "$build/examples/statefs-demo" ]; then
	expect_exit 0 "$build/examples/statefs-demo"
	demo_dir=$(sed -n '1s|^statefs .* demo: store \(/.*\)/state\.db$|\1|p' <<<"$out")
	[ -n "$demo_dir" ] || fail "statefs-demo names no store: $out"
	[ ! -e "$demo_dir" ] || { ls -la "$demo_dir" >&2; rm -rf "$demo_dir"; fail "statefs-demo left $demo_dir behind"; }
	expect_eq "$err" "" "statefs-demo's stderr"
fi

sanitized_host sqlite3
# the installed SQLite extension loads by its bare name from the library
# path, as `.load libstatefs_sqlite` does once it is installed, and reads
# a store
if [ "$mode" = encrypted ]; then
	"$STATECTL" --db "$T/ext.db" --key-file "$T/ext.key" init >/dev/null
	"$STATECTL" --db "$T/ext.db" --key-file "$T/ext.key" put s n k installed
	got=$(STATEFS_KEY_FILE=$T/ext.key LD_LIBRARY_PATH=$D$(abs "$libdir") sqlite3 -bail \
		-cmd ".load libstatefs_sqlite" -cmd ".open $T/ext.db" :memory: \
		"SELECT CAST(value AS TEXT) FROM function_state") ||
		fail "the installed extension does not load"
	expect_eq "$got" installed "the installed extension reads the store"
fi

# man pages render without warnings, from the source and installed
for page in "$src/docs/man/statectl.1" "$src/docs/man/statefs.1" "$D$(abs "$mandir")/man1/statectl.1"; do
	MANWIDTH=80 man --warnings -l "$page" >"$T/man.txt" 2>"$T/man.err" || fail "man -l $page failed"
	[ ! -s "$T/man.err" ] || { cat "$T/man.err" >&2; fail "man $page warns"; }
	[ "$(wc -l <"$T/man.txt")" -gt 30 ] || fail "man $page rendered almost nothing"
	groff -man -ww -z "$page" 2>"$T/groff.err" || fail "groff failed on $page"
	[ ! -s "$T/groff.err" ] || { cat "$T/groff.err" >&2; fail "groff warns on $page"; }
done
grep -q 'EXIT STATUS' "$T/man.txt" || fail "statectl(1) documents the exit status"

# every engine function the docs name is one the sources have (postgres.md
# named sfs_kv_restore and sfs_queue_clear, gone since the API narrowed)
grep -ohE '\bsfs_[a-z0-9_]*[a-z0-9]\b' "$src/README.md" "$src"/docs/*.md | sort -u >"$T/doc-names"
grep -rohE '\bsfs_[a-z0-9_]*[a-z0-9]\b' "$src/core" "$src/fs" "$src/mountd" "$src/statectl" \
	"$src"/tests/*/meson.build | sort -u >"$T/src-names"
gone=$(comm -23 "$T/doc-names" "$T/src-names")
[ -z "$gone" ] || fail "the docs name functions the sources lack: $(echo $gone)"

# the systemd units parse cleanly (verified as system units: a user
# manager needs a login session, and the syntax is the same)
if command -v systemd-analyze >/dev/null; then
	udir=$(dirname "$units")
	sed "s|$(abs "$bindir")/statefs|/bin/true|" "$udir/statefs.service" >"$T/statefs.service"
	sed "s|$(abs "$bindir")/statefs|/bin/true|" "$udir/statefs@.service" >"$T/statefs@home-u-statefs.service"
	systemd-analyze verify --man=no "$T/statefs.service" \
		"$T/statefs@home-u-statefs.service" >"$T/sd.out" 2>&1 ||
		{ cat "$T/sd.out" >&2; fail "systemd-analyze verify failed"; }
	[ ! -s "$T/sd.out" ] || { cat "$T/sd.out" >&2; fail "systemd-analyze warns about the units"; }
fi

# the unit's ExecStart, as installed, mounts the default store in the
# foreground and SIGTERM (what systemd sends) unmounts it with exit 0
if [ -e /dev/fuse ] && [ -e "$D$(abs "$bindir")/statefs" ]; then
	mnt=$T/mnt
	mkdir -p "$mnt"
	read -r -a start < <(sed -n 's/^ExecStart=//p' "$units")
	start=("${start[@]//%f/$mnt}")
	start[0]=$D${start[0]}
	LD_LIBRARY_PATH=$D$(abs "$libdir") "${start[@]}" 2>"$T/daemon.err" &
	dpid=$!
	cleanup_hooks+=('fusermount3 -u -z "$mnt" 2>/dev/null; [ -z "$dpid" ] || { kill "$dpid"; wait "$dpid"; } 2>/dev/null')
	for _ in $(seq 100); do mountpoint -q "$mnt" && break; nap 0.05; done
	mountpoint -q "$mnt" || { cat "$T/daemon.err" >&2; fail "the unit's command did not mount"; }
	mkdir -p "$mnt/unit/ns" && echo from-mount >"$mnt/unit/ns/k"
	expect_eq "$("$STATECTL" get unit ns k)" from-mount "statectl reads the default store the unit mounted"
	# names seen under the mount paste into statectl, and back
	for name in 'a%2Fb' '%x00ff01' 'café' '%2Epop' '50%25'; do
		"$STATECTL" put unit ns "$name" "value of $name"
	done
	"$STATECTL" put '%65xec' ns k in-scope-exec
	"$STATECTL" put unit worker 42 worker-42
	n=0
	while IFS= read -r name; do
		expect_eq "$("$STATECTL" get unit ns "$name")" "$(cat "$mnt/unit/ns/$name")" "the mount's name $name in statectl"
		n=$((n + 1))
	done < <(ls "$mnt/unit/ns")
	[ "$n" -eq 6 ] || fail "the mount lists $n names, not 6"
	expect_eq "$(ls "$mnt/unit/ns" | sort)" "$("$STATECTL" ls unit ns | sort)" "statectl ls prints the mount's names"
	expect_eq "$(cat "$mnt/%65xec/ns/k")" in-scope-exec "a scope named exec"
	expect_eq "$(cat "$mnt/unit/worker/42")" worker-42 "typed namespace ids"
	# statefs(1)'s EXAMPLES as a user copies them, on this mount (but for
	# the lines that mount and unmount it); process is any consumer
	{
		echo 'set -e; process() { cat >/dev/null; }'
		sed -n '/^\.SH EXAMPLES/,/^\.EE/s/^\$ //p' "$src/docs/man/statefs.1" |
			sed -e 's/\\-/-/g' -e '/^statefs /d' -e '/^fusermount3 /d' -e "s|~/statefs|$mnt|g"
	} >"$T/man-examples.sh"
	bash "$T/man-examples.sh" >"$T/man-examples.out" 2>"$T/man-examples.err" ||
		{ cat "$T/man-examples.sh" "$T/man-examples.err" >&2; fail "statefs(1)'s EXAMPLES fail"; }
	expect_eq "$(head -n 5 "$T/man-examples.out")" $'3\n1\njob 1\njob 2\njob 3' "statefs(1)'s EXAMPLES print what they show"
	expect_eq "$("$STATECTL" counter get jobs stats done)" 1 "statefs(1)'s EXAMPLES count"
	expect_eq "$("$STATECTL" --json info | jq -c '.rows | [.queue, .claimed]')" '[0,0]' "statefs(1)'s EXAMPLES settle their claim"
	kill -TERM "$dpid"
	got=0; wait "$dpid" || got=$?
	dpid=
	[ "$got" -eq 0 ] || { cat "$T/daemon.err" >&2; fail "the daemon exits $got on SIGTERM"; }
	! mountpoint -q "$mnt" || fail "SIGTERM left the mount"
fi

# scripts/setup run again, as a user does to get the store back: its
# installing steps are stubs (a test installs nothing), the daemon is the
# build's. Again on a live mount it leaves it be; after the daemon was
# killed (its mount dead, ENOTCONN) it mounts the store again where it
# failed, at mkdir -p: "cannot stat ...: Transport endpoint is not
# connected"; over another file system it refuses where it said "already
# mounted", exit 0.
if [ -e /dev/fuse ] && [ -e "$build/mountd/statefs" ]; then
	stub=$T/stub smnt=$T/setup-mnt
	mkdir -p "$stub"
	for c in ninja ldconfig; do printf '#!/bin/sh\nexit 0\n' >"$stub/$c"; done
	printf '#!/bin/sh\nexec "$@"\n' >"$stub/sudo"
	printf '#!/bin/sh\necho "install ok installed"\n' >"$stub/dpkg-query"
	# the installed daemon; meson install changes it when $T/upgrade exists
	printf '#!/bin/sh\nexec %q "$@"\n' "$(cd "$build" && pwd)/mountd/statefs" >"$stub/statefs"
	printf '#!/bin/sh\n[ ! -e %q ] || echo "# upgraded $$" >>%q\n' "$T/upgrade" "$stub/statefs" >"$stub/meson"
	chmod +x "$stub"/*
	setup() { PATH=$stub:$PATH STATEFS_BUILD=$build "$src/scripts/setup" "$smnt"; }
	setup_pid() { # the daemon serving $smnt
		local p c
		for p in $(pgrep -x statefs); do
			c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || continue
			[[ $c != *"/statefs $smnt " ]] || echo "$p"
		done
	}
	cleanup_hooks+=('fusermount3 -u -z "$smnt" 2>/dev/null; for p in $(setup_pid); do kill "$p"; done')
	stop_post() { # MOUNTPOINT: the installed unit's ExecStopPost, as systemd runs it
		local line
		line=$(sed -n 's/^ExecStopPost=-//p' "$units")
		line=${line//\$\$/\$}
		eval "${line//%f/$(printf '%q' "$1")}"
	}
	expect_exit 0 setup
	mountpoint -q "$smnt" || fail "setup did not mount: $err"
	# the unit's ExecStopPost, after a start that refused a live mount
	# point, leaves that mount be (its fusermount3 -u -z took it away)
	stop_post "$smnt"
	mountpoint -q "$smnt" || fail "the unit's ExecStopPost unmounted another daemon's live mount"
	mkdir -p "$smnt/setup/ns" && echo kept >"$smnt/setup/ns/k"
	expect_exit 0 setup
	expect_match "$err" "is already mounted" "setup again on the live mount"
	expect_eq "$(findmnt -n -o TARGET -M "$smnt" | wc -l)" 1 "mounts at $smnt after setup twice"
	dead=$(setup_pid)
	[ -n "$dead" ] || fail "no daemon serves $smnt"
	kill -KILL $dead
	end=$((SECONDS + 60)) # gone, or a zombie of whoever reaps it
	while [ $SECONDS -lt $end ] && read -r _ _ st _ <"/proc/$dead/stat" 2>/dev/null &&
		[ "$st" != Z ]; do nap 0.05; done
	! stat -f "$smnt" >/dev/null 2>&1 || fail "the mount of a killed daemon still answers"
	expect_exit 0 setup
	expect_match "$err" "gone: unmounting its dead mount" "setup on a dead mount"
	expect_eq "$(cat "$smnt/setup/ns/k")" kept "the store mounted again after kill -9"
	expect_eq "$(findmnt -n -o TARGET -M "$smnt" | wc -l)" 1 "mounts at $smnt after setup on the dead one"
	# a run that installs another statefs mounts the store again with it
	# (it said "already mounted" and left the daemon of before, which a
	# store the new one migrated fails with EIO), but not under a user
	touch "$T/upgrade"
	(cd "$smnt" && exec sleep 600) &
	user=$!
	expect_exit 1 setup
	expect_match "$err" "is in use, so it still runs the statefs installed before" "setup after an upgrade, the mount in use"
	kill "$user"; wait "$user" 2>/dev/null || :
	old_pid=$(setup_pid)
	expect_exit 0 setup
	expect_match "$err" "served by the statefs installed before: mounting it again" "setup after an upgrade"
	new_pid=$(setup_pid)
	[ -n "$new_pid" ] && [ "$new_pid" != "$old_pid" ] || fail "setup after an upgrade left the daemon $old_pid (now: $new_pid)"
	expect_eq "$(cat "$smnt/setup/ns/k")" kept "the store mounted again after an upgrade"
	expect_eq "$(findmnt -n -o TARGET -M "$smnt" | wc -l)" 1 "mounts at $smnt after an upgrade"
	rm "$T/upgrade"
	expect_exit 0 setup
	expect_match "$err" "is already mounted" "setup again after the upgrade"
	# and after a crash it unmounts the dead mount
	dead=$(setup_pid)
	kill -KILL $dead
	end=$((SECONDS + 60))
	while [ $SECONDS -lt $end ] && read -r _ _ st _ <"/proc/$dead/stat" 2>/dev/null &&
		[ "$st" != Z ]; do nap 0.05; done
	stop_post "$smnt"
	[ -z "$(findmnt -n -M "$smnt")" ] || fail "the unit's ExecStopPost left the dead mount"
	expect_exit 0 setup
	fusermount3 -u "$smnt"
	# HOME unset: ~ is the passwd entry's home, as the daemon takes it for
	# the default store (a stubbed getent's here; the store itself comes
	# from XDG_STATE_HOME and XDG_CONFIG_HOME): it failed with 'HOME:
	# unbound variable'
	printf '#!/bin/sh\necho "u:x:%s:%s::%s:/bin/sh"\n' "$(id -u)" "$(id -g)" "$T/pwhome" >"$stub/getent"
	chmod +x "$stub/getent"
	mkdir -p "$T/pwhome"
	cleanup_hooks+=('fusermount3 -u -z "$T/pwhome/statefs" 2>/dev/null')
	expect_exit 0 env -u HOME PATH="$stub:$PATH" STATEFS_BUILD="$build" "$src/scripts/setup"
	expect_eq "$(cat "$T/pwhome/statefs/setup/ns/k")" kept "setup with HOME unset mounts the store at the passwd home's statefs"
	fusermount3 -u "$T/pwhome/statefs"
	for p in $(setup_pid); do kill "$p"; done
	# a relative mount point is the caller's: it was taken under the
	# repository, where setup goes to build
	mkdir -p "$T/cwd"
	cleanup_hooks+=('fusermount3 -u -z "$T/cwd/rel" 2>/dev/null')
	expect_exit 0 env -C "$T/cwd" PATH="$stub:$PATH" STATEFS_BUILD="$build" "$src/scripts/setup" rel
	expect_eq "$(cat "$T/cwd/rel/setup/ns/k")" kept "setup with a relative mount point mounts it in the caller's directory"
	fusermount3 -u "$T/cwd/rel"
	for p in $(setup_pid); do kill "$p"; done
	if [ "$(id -u)" -eq 0 ]; then
		mount -t tmpfs none "$smnt"
		cleanup_hooks+=('umount "$smnt" 2>/dev/null')
		expect_exit 1 setup
		expect_match "$err" "mount point of a tmpfs file system, not of statefs" "setup over a tmpfs"
		umount "$smnt"
	fi
fi

# bash completion, as installed, with the statectl under test
complete_line() { # WORDS... (the last is the word being completed)
	bash -c '
		. "$1"; shift
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_statectl
		printf "%s\n" "${COMPREPLY[@]}"' complete "$comp" "$@"
}
expect_eq "$(complete_line "$STATECTL" qu)" queue "completes a command"
expect_eq "$(complete_line "$STATECTL" queue p | sort | tr '\n' ' ')" "policy pop push " "completes a subcommand"
expect_match "$(complete_line "$STATECTL" scan --s)" "--start" "completes an option"
expect_eq "$(complete_line "$STATECTL" to)" top "completes top"
expect_eq "$(complete_line "$STATECTL" met)" metrics "completes metrics"
expect_eq "$(complete_line "$STATECTL" top --i)" --interval "completes top's options"
expect_match "$(complete_line "$STATECTL" top --interval '')" "500ms" "completes an interval"
expect_eq "$(complete_line "$STATECTL" ls --family q)" queue "completes --family"
make_store
sc put alpha ns1 key1 v
sc put alpine ns2 key2 v
sc queue push jobs x >/dev/null
expect_eq "$(complete_line "$STATECTL" --db "$DB" "${modeopts[@]}" get al | sort | tr '\n' ' ')" "alpha alpine " "completes scopes from the store"
expect_eq "$(complete_line "$STATECTL" --db "$DB" "${modeopts[@]}" get alpha '')" ns1 "completes namespaces"
expect_eq "$(complete_line "$STATECTL" --db "$DB" "${modeopts[@]}" get alpha ns1 k)" key1 "completes keys"
expect_eq "$(complete_line "$STATECTL" --db "$DB" "${modeopts[@]}" queue pop j)" jobs "completes queue names"

echo "cli_install ($mode): ok"
