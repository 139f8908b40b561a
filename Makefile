# SPDX-License-Identifier: MIT
# Entry points: `make demo` records and shows a trace; `make check` runs every test.
# Each target installs its Debian dependencies when missing (scripts/deps.sh).

BUILD ?= build
JOBS ?= $(shell nproc)
PREFIX ?= /usr/local
CMAKE_FLAGS ?=

.PHONY: all deps demo check test soak sanitize stress model bench fuzz abi abi-update install clean

all: $(BUILD)/Makefile
	cmake --build $(BUILD) -j$(JOBS)

deps:
	./scripts/deps.sh build test

$(BUILD)/Makefile:
	./scripts/deps.sh build test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo $(CMAKE_FLAGS)

# Record the bundled multi-threaded example and show what was recorded.
demo: all
	./scripts/demo.sh $(BUILD)

# Every test: the normal build with -Werror; the stress, integration and
# unit tests again under AddressSanitizer+UBSan and ThreadSanitizer; and
# each libFuzzer target for a few seconds (clang build).
check:
	./scripts/deps.sh build test
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSTRATA_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE 'fuzz|soak'
	./scripts/sanitize.sh
	./scripts/fuzz.sh

sanitize:
	./scripts/sanitize.sh

fuzz:
	./scripts/deps.sh build test
	./scripts/fuzz.sh

test: all
	cd $(BUILD) && ctest --output-on-failure -j$(JOBS) -LE soak

# The daemon under 10,000 short programs (issue 24, item 6): minutes.
soak: all
	cd $(BUILD) && ctest --output-on-failure -L soak

# The full-size stress test: 2 x cores threads, 2 million events each.
stress: all
	cmake -S . -B $(BUILD) -DSTRATA_STRESS_EVENTS=2000000
	cmake --build $(BUILD) -j$(JOBS) --target stress
	cd $(BUILD) && ctest --output-on-failure -L stress
	cmake -S . -B $(BUILD) -DSTRATA_STRESS_EVENTS=200000

# Model-check the thread-attribution protocol (docs/ring.md §5).
model:
	./scripts/deps.sh build test
	./tests/model/run.sh

bench:
	./scripts/deps.sh build test bench
	./bench/run.sh

# libstrata.so's ABI against abi/libstrata.abi (also in `make check`:
# ctest -L abi). abi-update records a deliberate change as the new
# baseline (include/strata/inline/ring.h, "ABI", says what may change).
abi: all
	./scripts/abi-check.sh $(BUILD)/src/libstrata.so

abi-update: all
	./scripts/abi-check.sh --update $(BUILD)/src/libstrata.so

install: all
	cmake --install $(BUILD) --prefix $(PREFIX)

clean:
	rm -rf $(BUILD) build-asan build-tsan build-bench build-fuzz
