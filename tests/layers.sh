#!/usr/bin/env bash
# layers.sh: the include boundaries of docs/architecture.md, checked on the
# source tree, so that a layer violation fails the test run.
#
# Usage: tests/layers.sh [SOURCE_ROOT]   (default: the tree this script is in)
#        tests/layers.sh --self-test     (the rules catch what they must: a
#                                         copy of the tree with four
#                                         violations fails with four lines)
# Rules, each a plain grep over #include lines:
#   - core/statefs.h, the contract, includes only the C library;
#   - fs/, mountd/, statectl/ and examples/ include no database header
#     (sqlite3.h, libpq-fe.h) and no private header of core/ (*_i.h);
#     fs/ and mountd/ no sodium.h (long names' hash is sfs_digest);
#   - core/ outside a backend's folder includes no database header and
#     nothing of a backend's folder: only core/<backend>/ knows its
#     database: only core/sqlite/ includes sqlite3.h, only core/pg/
#     libpq-fe.h;
#   - a backend includes no other backend's headers.
# tests/ and bench/ are white-box (they test or measure one module from
# inside) and are not checked. A backend is a folder of core/ other than
# crypt/ (keys and page sealing, which every backend may use).
# Exit: 0 when every rule holds; 1 with one line per violation.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)

if [ "${1:-}" = --self-test ]; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	cp -r "$here"/core "$here"/fs "$here"/mountd "$here"/statectl "$tmp"/
	"$0" "$tmp" >/dev/null || { echo "layers: the clean copy fails"; exit 1; }
	sed -i '1i #include <sqlite3.h>' "$tmp/fs/fs.c"
	sed -i '1i #include "store_i.h"' "$tmp/statectl/main.c"
	sed -i '1i #include "sqlite/sqlite_i.h"' "$tmp/core/store.c"
	sed -i '1i #include <libpq-fe.h>' "$tmp/core/sqlite/kv.c"
	out=$("$0" "$tmp" || true)
	n=$(printf '%s\n' "$out" | grep -c '^layers:' || true)
	if [ "$n" -ne 4 ]; then
		echo "layers: the self-test found $n violations, not 4:"
		printf '%s\n' "$out"
		exit 1
	fi
	exit 0
fi

top=${1:-$here}
cd "$top"

bad=0
fail() { echo "layers: $*"; bad=1; }

# The #include lines of files, as "file:line:text".
includes() { grep -Hn '^[[:space:]]*#[[:space:]]*include' "$@" 2>/dev/null || true; }

backends=$(find core -mindepth 1 -maxdepth 1 -type d ! -name crypt \
             -printf '%f\n' | sort)
[ -n "$backends" ] || fail "no backend folder under core/"
declare -A backend_headers # backend -> its headers' names (found once)
for b in $backends; do
	backend_headers[$b]=$(find "core/$b" -name '*.h' -printf '%f\n')
done
private=$(find core -name '*_i.h' -printf '%f\n' | sort -u)
[ -n "$private" ] || fail "no private header under core/"

# The contract.
while IFS= read -r line; do
	case $line in
	*'<stddef.h>'* | *'<stdint.h>'* | *'<string.h>'*) ;;
	*) fail "core/statefs.h must include only the C library: $line" ;;
	esac
done < <(includes core/statefs.h)

# Above core/.
for dir in fs mountd statectl examples; do
	[ -d "$dir" ] || continue
	files=$(find "$dir" -name '*.[ch]' | sort)
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		case $line in
		*sqlite3.h* | *libpq-fe.h*)
			fail "$dir/ talks to a database only through core/: $line" ;;
		*sodium.h*)
			case $dir:$line in
			statectl:* | examples:*) ;;
			*) fail "$dir/ holds no crypto: $line" ;;
			esac ;;
		esac
		for h in $private; do
			case $line in
			*\"$h\"* | */$h\"*)
				fail "$dir/ includes core's private header $h: $line" ;;
			esac
		done
	done < <(includes $files)
done

# core/ outside the backends.
files=$(find core -maxdepth 1 -name '*.[ch]'; find core/crypt -name '*.[ch]')
while IFS= read -r line; do
	[ -n "$line" ] || continue
	case $line in
	*sqlite3.h* | *libpq-fe.h*)
		fail "only a backend includes its database's header: $line" ;;
	esac
	for b in $backends; do
		case $line in
		*\"$b/*) fail "only core/$b/ includes its own headers: $line" ;;
		esac
		for h in ${backend_headers[$b]}; do
			case $line in
			*\"$h\"*) fail "only core/$b/ includes $h: $line" ;;
			esac
		done
	done
done < <(includes $files)

# Each backend: no other backend's headers, no other database's header.
for b in $backends; do
	files=$(find "core/$b" -name '*.[ch]')
	while IFS= read -r line; do
		[ -n "$line" ] || continue
		for o in $backends; do
			[ "$o" = "$b" ] && continue
			case $line in
			*\"$o/*) fail "core/$b/ includes core/$o/: $line" ;;
			esac
		done
		case $b:$line in
		sqlite:*libpq-fe.h*) fail "only core/pg/ includes libpq-fe.h: $line" ;;
		pg:*sqlite3.h*) fail "only core/sqlite/ includes sqlite3.h: $line" ;;
		sqlite:* | pg:*) ;;
		*:*sqlite3.h*) fail "only core/sqlite/ includes sqlite3.h: $line" ;;
		*:*libpq-fe.h*) fail "only core/pg/ includes libpq-fe.h: $line" ;;
		esac
	done < <(includes $files)
done

exit $bad
