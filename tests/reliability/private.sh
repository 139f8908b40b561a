#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Traces are private (issue 24, item 11): under umask 022, every directory
# of a trace is 0700 and every file 0600, in the embedded mode, under
# strata record and under strata daemon; STRATA_GROUP shares one read-only
# with a group; another uid reads nothing.
set -euo pipefail
bin=$1
work=$2
. "$(dirname "$0")/common.sh"
rel_init private "$bin" "$work"
export STRATA_RUNTIME_DIR=$work/run
trap '"$strata" daemon --kill >/dev/null 2>&1 || true' EXIT
umask 022

# check DIR DIRMODE FILEMODE [GROUP]
check() {
	local bad
	[ -d "$1" ] || fail "$1: no trace"
	bad=$(find "$1" -type d ! -perm "$2" -printf '%m %p\n' | head -3)
	[ -z "$bad" ] || fail "directories not $2: $bad"
	bad=$(find "$1" -type f ! -perm "$3" -printf '%m %p\n' | head -3)
	[ -z "$bad" ] || fail "files not $3: $bad"
	[ "$(find "$1" -type f | wc -l)" -ge 3 ] || fail "$1: too few files"
	if [ -n "${4:-}" ]; then
		bad=$(find "$1" ! -group "$4" -printf '%g %p\n' | head -3)
		[ -z "$bad" ] || fail "not of group $4: $bad"
	fi
}

STRATA_OUTPUT=$work/emb "$burst" 1000 >/dev/null
check emb 700 600
"$strata" record -o rec -- "$burst" 1000 >/dev/null 2>rec.err || fail "record: $(cat rec.err)"
check rec 700 600
"$strata" daemon -o dmn 2>d.err || fail "daemon: $(cat d.err)"
"$burst" 1000 >/dev/null
"$strata" daemon --kill 2>>d.err || fail "daemon --kill: $(cat d.err)"
check dmn 700 600

# Shared with a group, read-only.
grp=$(getent group 100 >/dev/null && echo 100 || id -g)
gname=$(getent group "$grp" | cut -d: -f1)
STRATA_GROUP=$gname STRATA_OUTPUT=$work/grp "$burst" 1000 >/dev/null
check grp 750 640 "$gname"

# Another uid reads nothing of a private trace.
if [ "$(id -u)" = 0 ] && command -v setpriv >/dev/null && id nobody >/dev/null 2>&1; then
	chmod 755 "$work" # the trace itself must be what stops it
	f=$(find emb -name metadata | head -1)
	if setpriv --reuid=nobody --regid=nogroup --clear-groups cat "$f" >/dev/null 2>&1; then
		fail "another uid read $f"
	fi
fi
echo "private: embedded, record and daemon traces 0700/0600 under umask 022; STRATA_GROUP=$gname gives 0750/0640"
