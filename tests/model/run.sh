#!/bin/sh
# SPDX-License-Identifier: MIT
# Model-check the owner hint protocol (docs/ring.md §3, §5) with spin.
#
# The correct model must pass with 0 errors over its full state space, both
# sequentially consistent and with x86 store buffers (-DTSO); each variant
# that breaks one rule must report an assertion violation, which shows the
# check can fail. Exits 0 on success, 1 on failure, 77 (CTest's skip code)
# when spin or a C compiler is missing.
#
# Usage: run.sh [-v]      -v: print spin's counterexample for each variant
# Env:   SPIN, CC, PAN_CFLAGS (default: -O2 -DSAFETY -DCOLLAPSE),
#        PAN_FLAGS (default: -m100000), MODEL_DEFS (extra -D for every run,
#        e.g. "-DNEV1=3 -DNEV2=3")
set -u

here=$(cd "$(dirname "$0")" && pwd)
SPIN=${SPIN:-spin}
CC=${CC:-cc}
PAN_CFLAGS=${PAN_CFLAGS:--O2 -DSAFETY -DCOLLAPSE}
PAN_FLAGS=${PAN_FLAGS:--m100000}
MODEL_DEFS=${MODEL_DEFS:-}
verbose=0
[ "${1:-}" = "-v" ] && verbose=1

if ! command -v "$SPIN" >/dev/null 2>&1; then
	echo "SKIP: spin not found (apt-get install spin)"
	exit 77
fi
if ! command -v "$CC" >/dev/null 2>&1; then
	echo "SKIP: no C compiler ($CC) to build spin's verifier"
	exit 77
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-model.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT INT TERM
cp "$here/owner.pml" "$work/" || exit 1
cd "$work" || exit 1

fail=0

# check NAME EXPECT DEFS...: EXPECT is "pass" or "assert"
check() {
	name=$1
	expect=$2
	shift 2
	rm -f pan pan.* owner.pml.trail
	# shellcheck disable=SC2086
	if ! "$SPIN" $MODEL_DEFS "$@" -a owner.pml >spin.log 2>&1; then
		echo "FAIL $name: spin -a failed"
		cat spin.log
		fail=1
		return
	fi
	# shellcheck disable=SC2086
	if ! $CC $PAN_CFLAGS -w -o pan pan.c >cc.log 2>&1; then
		echo "FAIL $name: building pan failed"
		cat cc.log
		fail=1
		return
	fi
	t0=$(date +%s)
	# shellcheck disable=SC2086
	./pan $PAN_FLAGS >pan.log 2>&1
	t1=$(date +%s)
	errors=$(sed -n 's/.*errors: \([0-9]*\).*/\1/p' pan.log)
	states=$(sed -n 's/^ *\([0-9.e+]*\) states, stored.*/\1/p' pan.log)
	depth=$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' pan.log)
	summary="states=$states depth=$depth errors=$errors time=$((t1 - t0))s"
	case $expect in
	pass)
		if [ "$errors" = 0 ] &&
		   ! grep -q "max search depth too small" pan.log &&
		   ! grep -q "out of memory" pan.log; then
			echo "ok   $name: $summary"
		else
			echo "FAIL $name: expected 0 errors over the full state space: $summary"
			cat pan.log
			[ -f owner.pml.trail ] && "$SPIN" $MODEL_DEFS "$@" -t owner.pml
			fail=1
		fi
		;;
	assert)
		if grep -q "assertion violated" pan.log; then
			what=$(grep -m1 "assertion violated" pan.log | sed 's/^pan:1: //')
			echo "ok   $name: fails as it must: $what"
			if [ $verbose = 1 ]; then
				# shellcheck disable=SC2086
				"$SPIN" $MODEL_DEFS "$@" -t owner.pml |
					sed -n '/^ *[A-Tb]/p' | sed 's/^ */    /' |
					grep -v '^    #processes'
			fi
		else
			echo "FAIL $name: expected an assertion violation: $summary"
			cat pan.log
			fail=1
		fi
		;;
	esac
}

echo "spin: $("$SPIN" -V)"
check "owner (SC)" pass
check "owner (x86-TSO store buffers)" pass -DTSO
check "owner (rseq sections, ring.md §7)" pass -DRSEQ
check "owner (reset only if stored, §3 rule 4 as written)" pass -DRESET_IF_STORED
check "broken rule 1: owner loaded before write" assert -DBROKEN_C_BEFORE_B
check "broken rule 2: owner stored before write is loaded" assert -DBROKEN_E_BEFORE_B
check "broken rule 2: need not sticky" assert -DBROKEN_NOT_STICKY
check "broken rule 3: nested writer trusts owner" assert -DBROKEN_NO_RULE3
check "broken rule 3 (rseq): nested writer trusts owner" assert -DRSEQ -DBROKEN_NO_RULE3
check "broken rule 4 (rseq): no reset on give-up" assert -DRSEQ -DBROKEN_NO_RULE4
check "broken §7: inline path inside the nesting guard" assert -DRSEQ -DBROKEN_FAST_IN_GUARD
check "broken rule 4: no reset on give-up" assert -DBROKEN_NO_RULE4
check "broken §4: opener leaves owner alone" assert -DBROKEN_OPENER_NO_OWNER
check "broken F: CAS does not order E (TSO, no drain)" assert -DTSO -DBROKEN_RELAXED_CAS

if [ $fail != 0 ]; then
	echo "model-owner: FAILED"
	exit 1
fi
echo "model-owner: passed"
exit 0
