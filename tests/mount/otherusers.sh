#!/usr/bin/env bash
# otherusers.sh - -o allow_other lets another local user reach the mount
# only as far as the modes it shows say (issue 10 item 3): the daemon adds
# default_permissions, so the kernel checks them, and the modes are the
# owner's only unless -o umask= widens them. Checked as user nobody
# (setpriv --reuid=65534): no read, write, delete, mkdir or pop by default;
# with umask=022 reads and peeks, but no write, delete or pop (a read that
# pops needs the permission to change the store). Root, who runs the
# tests, owns the store. Usage: see lib.sh. Exit: 0, 1, 77.
. "$(dirname "$0")/lib.sh"

command -v setpriv > /dev/null || fail "setpriv is not installed (util-linux)"
# nobody must be able to reach the mountpoint itself.
chmod 755 "$work"

# as_nobody CMD...: runs a shell command as nobody; prints its exit status
# and, on failure, the error message.
as_nobody() {
  setpriv --reuid=65534 --regid=65534 --clear-groups sh -c "$1" 2>&1 || true
}
# denied WHAT CMD: the command fails with "Permission denied".
denied() {
  local out
  out=$(as_nobody "$2 && echo ALLOWED")
  case $out in
    *ALLOWED*) fail "nobody could $1" ;;
    *"Permission denied"*) ;;
    *) fail "nobody's $1: unexpected: $out" ;;
  esac
}
allowed() {
  local out
  out=$(as_nobody "$2 && echo ALLOWED")
  case $out in
    *ALLOWED*) ;;
    *) fail "nobody could not $1: $out" ;;
  esac
}

populate() {
  mkdir -p "$mnt/app/cfg" "$mnt/exec/run/log/k" "$mnt/counter/app/c"
  echo secret > "$mnt/app/cfg/token"
  echo entry > "$mnt/exec/run/log/k/new"
  echo job1 > "$mnt/queue/jobs/new"
  echo job2 > "$mnt/queue/jobs/new"
  echo 5 > "$mnt/counter/app/c/n"
}

mount_fs -o allow_other
populate
denied "list the root" "ls '$mnt'"
denied "read a value" "cat '$mnt/app/cfg/token'"
denied "overwrite a value" "echo stolen > '$mnt/app/cfg/token'"
denied "delete a value" "rm -f '$mnt/app/cfg/token'"
denied "make a namespace" "mkdir '$mnt/app/new'"
denied "pop an item" "cat '$mnt/queue/jobs/.pop'"
denied "push an item" "echo x > '$mnt/queue/jobs/new'"
denied "add to a counter" "echo +1 > '$mnt/counter/app/c/n'"
expect_eq "$(cat "$mnt/app/cfg/token")" secret "the value after nobody's tries"
expect_eq "$(ls "$mnt/queue/jobs" | wc -l)" 2 "both items are still there"
expect_eq "$(stat -c %a "$mnt" "$mnt/app/cfg" "$mnt/app/cfg/token" \
  "$mnt/queue/jobs" "$mnt/queue/jobs/.pop" | tr '\n' ' ')" "700 700 600 700 400 " \
  "the modes shown: the owner's only"
expect_eq "$(stat -c %a "$mnt/exec/run/log/k"/0* "$mnt/queue/jobs"/0* | sort -u)" 400 \
  "entries and items: read-only, the owner's"
grep -q "default_permissions" /proc/mounts || fail "default_permissions is not on"
unmount_fs
ok "allow_other: other users get nothing by default"

# -o umask=022: readable by others, still not changeable by them.
mount_fs -o allow_other,umask=022
expect_eq "$(stat -c %a "$mnt" "$mnt/app/cfg/token" "$mnt/queue/jobs/.pop" \
  "$mnt/queue/jobs/.drain" | tr '\n' ' ')" "755 644 400 400 " "the modes with umask 022"
allowed "read a value" "cat '$mnt/app/cfg/token' > /dev/null"
allowed "peek at an item" "cat '$mnt/queue/jobs'/0* > /dev/null"
allowed "read a log entry" "cat '$mnt/exec/run/log/k'/0* > /dev/null"
denied "overwrite a value" "echo stolen > '$mnt/app/cfg/token'"
denied "truncate a value" "truncate -s 0 '$mnt/app/cfg/token'"
denied "delete a value" "rm -f '$mnt/app/cfg/token'"
denied "rename a value" "mv '$mnt/app/cfg/token' '$mnt/app/cfg/mine'"
denied "delete an item" "rm -f '$mnt/queue/jobs'/0*"
denied "pop an item" "cat '$mnt/queue/jobs/.pop'"
denied "drain a queue" "cat '$mnt/queue/jobs/.drain'"
denied "claim an item" "cat '$mnt/queue/jobs/.claim'"
denied "drain a namespace" "cat '$mnt/app/cfg/.drain'"
expect_eq "$(cat "$mnt/app/cfg/token")" secret "the value after nobody's tries"
expect_eq "$(ls "$mnt/queue/jobs" | wc -l)" 2 "both items are still there"
unmount_fs
ok "allow_other,umask=022: others read, and change nothing"

# Without allow_other nobody gets in at all (FUSE's own rule), and a bad
# umask is refused with a sentence.
mount_fs
denied "stat the mount" "stat '$mnt/app' > /dev/null"
unmount_fs
out=$("$STATEFS_BIN" -f "${mode_opts[@]}" -o umask=999 "$mnt" 2>&1) && fail "umask=999 accepted"
grep -q "octal" <<<"$out" || fail "no sentence for umask=999: $out"
ok "no allow_other: nobody gets in; a bad umask is refused"
