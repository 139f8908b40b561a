# SPDX-License-Identifier: MIT
# Shared by the kernel tests: skip (77) with a printed reason without root or tracefs.
# One kernel test at a time on the machine: RUN_SERIAL orders them within
# one ctest run, this lock across runs (two build trees tested at once
# would otherwise see each other's tracefs instances).
kernel_test_require() {
	if [ "$(id -u)" != 0 ]; then
		echo "SKIP: kernel tracing needs root (running as uid $(id -u))"
		exit 77
	fi
	if ! grep -qw tracefs /proc/filesystems; then
		echo "SKIP: this kernel has no tracefs"
		exit 77
	fi
	if [ ! -d /sys/kernel/tracing/instances ] &&
	   ! { mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null && umount /sys/kernel/tracing; }; then
		echo "SKIP: tracefs cannot be mounted on /sys/kernel/tracing"
		exit 77
	fi
	if command -v flock >/dev/null; then
		exec 9>"${TMPDIR:-/tmp}/strata-kernel-tests.lock"
		flock -w 300 9 || { echo "FAIL: another kernel test held the lock for 5 minutes"; exit 1; }
	fi
}
