# Everyday verbs over the CMake build. See README.md.
BUILD      ?= build
BUILD_ASAN ?= build-asan
BUILD_FUZZ ?= build-fuzz
JOBS       ?= $(shell nproc)
FUZZ_SECONDS ?= 30
FUZZ_LONG_SECONDS ?= 600
FUZZ_LONG_GOAL ?=
SOAK_MINUTES ?= 30

.PHONY: all deps demo test test-asan bench soak fault-chaos fuzz fuzz-long results results-check clean format

all: $(BUILD)/Makefile
	@cmake --build $(BUILD) -j $(JOBS)

$(BUILD)/Makefile:
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release >/dev/null

deps:
	@scripts/install-deps

demo: deps all
	@scripts/demo

test: deps all
	@scripts/run-tests $(BUILD)

test-asan: deps
	@cmake -S . -B $(BUILD_ASAN) -DCMAKE_BUILD_TYPE=Asan >/dev/null
	@cmake --build $(BUILD_ASAN) -j $(JOBS)
	@scripts/run-tests $(BUILD_ASAN)

bench: deps all
	@bench/run $(BUILD)

# the fault chaos mix for SOAK_MINUTES, gantryd's and gantlet's memory and
# descriptors sampled (docs/faults.md); needs root; not part of test
soak: deps all
	@GANTRY_BUILD_DIR=$(abspath $(BUILD)) SOAK_MINUTES=$(SOAK_MINUTES) \
	    /usr/bin/python3 tests/e2e/soak_fault_chaos.py

# the fault chaos test's full 1,000-job run (docs/faults.md); needs root;
# `make test` runs it bounded (tests/e2e/test_fault_chaos.py, 400 jobs)
fault-chaos: deps all
	@GANTRY_BUILD_DIR=$(abspath $(BUILD)) /usr/bin/python3 tests/e2e/fault_chaos.py

fuzz: deps
	@cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_C_COMPILER=clang >/dev/null
	@cmake --build $(BUILD_FUZZ) -j $(JOBS)
	@for f in $(BUILD_FUZZ)/fuzz_*; do \
	    n=$${f##*/fuzz_}; mkdir -p $(BUILD_FUZZ)/corpus-$$n; \
	    echo "fuzz $$n for $(FUZZ_SECONDS)s"; \
	    $$f -max_total_time=$(FUZZ_SECONDS) -max_len=4096 $(BUILD_FUZZ)/corpus-$$n tests/fuzz/corpus/$$n \
	        2>$(BUILD_FUZZ)/fuzz-$$n.log || { tail -30 $(BUILD_FUZZ)/fuzz-$$n.log; exit 1; }; \
	done

# every target for FUZZ_LONG_SECONDS each, or until it has FUZZ_LONG_GOAL
# executions over this build's campaigns; per target: execs, cov/ft, crashes
fuzz-long: deps
	@cmake -S . -B $(BUILD_FUZZ) -DCMAKE_BUILD_TYPE=Fuzz -DCMAKE_C_COMPILER=clang >/dev/null
	@cmake --build $(BUILD_FUZZ) -j $(JOBS)
	@FUZZ_LONG_SECONDS=$(FUZZ_LONG_SECONDS) FUZZ_LONG_GOAL=$(FUZZ_LONG_GOAL) \
	    scripts/fuzz-long $(BUILD_FUZZ)

results: deps all
	@BUILD=$(BUILD) scripts/results

results-check: deps all
	@BUILD=$(BUILD) scripts/results --check

format:
	@clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	@rm -rf $(BUILD) $(BUILD_ASAN) $(BUILD_FUZZ)
