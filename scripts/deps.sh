#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Install the Debian packages strata needs for GROUP (build, test, bench), if missing.
set -euo pipefail

build=(gcc g++ make cmake pkg-config libmicrohttpd-dev libdw-dev libssl-dev libzstd-dev)
test=(libcmocka-dev babeltrace2 python3 clang libclang-rt-14-dev spin
      libtracefs-dev libtraceevent-dev libnl-genl-3-dev pajeng abigail-tools curl chromium nodejs
      strace)
# strata view's browser test: Debian's nodejs comes without npm, NodeSource's with it
command -v npm >/dev/null || test+=(npm)
bench=(liblttng-ust-dev lttng-tools libfxt-dev hyperfine valgrind)

want=("${build[@]}")
for g in "$@"; do
	case $g in
	build) ;;
	test) want+=("${test[@]}") ;;
	bench) want+=("${test[@]}" "${bench[@]}") ;;
	*) echo "deps.sh: unknown group '$g' (build, test, bench)" >&2; exit 2 ;;
	esac
done

missing=()
for p in "${want[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}" >&2
sudo=
if [ "$(id -u)" != 0 ]; then
	command -v sudo >/dev/null || {
		echo "deps: need root to install: apt-get install -y ${missing[*]}" >&2
		exit 1
	}
	sudo=sudo
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
