#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Build the libFuzzer targets with clang and run each briefly (tests labelled "fuzz").
# FUZZ_SECONDS overrides nothing here: longer campaigns are in docs/dsl.md, docs/cli.md.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v clang-14 >/dev/null || { echo "fuzz: clang-14 missing (apt-get install clang libclang-rt-14-dev)" >&2; exit 1; }
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	-DSTRATA_FUZZ=ON -DSTRATA_BENCH=OFF >/dev/null
cmake --build build-fuzz -j"$(nproc)" >/dev/null
cd build-fuzz && ctest --output-on-failure -L fuzz
