# SPDX-License-Identifier: MIT
# Sourced by the reliability tests.
#
# rel_init NAME BIN WORK: WORK made new and the current directory; $strata
# and $burst named; fail() says NAME; every strata setting the caller's
# environment may hold cleared, so that a test sees only what it sets
# (STRATA_RUNTIME_DIR is each test's own choice).
rel_init() {
	rel_name=$1 bin=$2 work=$3
	rm -rf "$work"
	mkdir -p "$work"
	cd "$work"
	strata=$bin/src/cli/strata
	burst=$bin/tests/reliability/burst
	unset STRATA_SESSION STRATA_OUTPUT STRATA_MAJORS STRATA_ENABLE STRATA_MODE \
		STRATA_GUARD STRATA_GUARDED STRATA_PACKETS STRATA_PACKET_SIZE \
		STRATA_GROUP STRATA_CLOCK STRATA_KTRACE_DIR
}

fail() { echo "$rel_name: FAIL: $*" >&2; exit 1; }

# rel_runs N: N, or STRATA_TEST_RUNS if that is fewer (scripts/sanitize.sh:
# the sanitizers look for memory and UB errors, which a few runs find as
# well as fifty).
rel_runs() {
	if [ -n "${STRATA_TEST_RUNS:-}" ] && [ "$1" -gt "$STRATA_TEST_RUNS" ]; then
		echo "$STRATA_TEST_RUNS"
	else
		echo "$1"
	fi
}

# rel_killed_setup: what rel_killed_both needs: babeltrace2 (to read the
# salvaged traces), CPU 0 (the programs put their threads on it), the
# guardians' session folders in the work folder, verbose salvage, no
# core files. Exits 77 (skipped) without the first two.
rel_killed_setup() {
	command -v babeltrace2 >/dev/null || { echo "babeltrace2 not installed"; exit 77; }
	taskset -c 0 true 2>/dev/null || { echo "$rel_name: cannot run on CPU 0; skipped"; exit 77; }
	export STRATA_VERBOSE=1 TMPDIR=$work/tmp
	mkdir -p "$TMPDIR"
	ulimit -c 0
}

# rel_killed_both PROGRAM CHECK ARGS...: PROGRAM ARGS kills itself
# (SIGKILL) while it traces, once embedded (its guardian salvages into
# ./t; the guardian waited for) and once under `strata record` (./r);
# after each, CHECK TRACE WHAT ERRFILE judges what was salvaged.
rel_killed_both() {
	local prog=$1 check=$2 rc
	shift 2
	rm -rf t r
	rc=0
	STRATA_OUTPUT=$work/t "$prog" "$@" 2>e.err || rc=$?
	[ "$rc" = 137 ] || fail "embedded: exit status $rc: $(cat e.err)"
	for _ in $(seq 200); do
		pgrep -f -- "--guard 3 -o $work/t\$" >/dev/null || break
		sleep 0.05
	done
	"$check" t embedded e.err
	rc=0
	"$strata" record -o r -- "$prog" "$@" 2>r.err || rc=$?
	[ "$rc" = 137 ] || fail "record: exit status $rc: $(cat r.err)"
	"$check" r record r.err
}
