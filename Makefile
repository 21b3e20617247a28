# The two commands of the README:
#   make run   - create/reuse .venv, install everything (native engine included), run the streaming demo
#   make test  - create/reuse .venv, install everything with test deps, run every test (CTest + pytest)
PYTHON ?= python3
VENV   := .venv
VPY    := $(VENV)/bin/python
STAMP  := $(VENV)/.renewable-huber-installed
NATIVE_STAMP := $(VENV)/.renewable-huber-native-cpu-installed
CUDA_STAMP := $(VENV)/.renewable-huber-native-cuda-installed
NATIVE_SOURCES := $(shell find native -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.h' -o -name '*.inc' -o -name '*.cu' -o -name '*.cuh' -o -name '*.json' -o -name '*.py' -o -name 'CMakeLists.txt' -o -name '*.cmake' -o -name '*.toml' \) -not -path 'native/build*') src/renewable_huber/_version.py
# The CUDA engine builds wherever nvcc is (no GPU needed); CI requires it.
NVCC := $(shell command -v nvcc || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_CMAKE := $(if $(NVCC),-DRH_BUILD_CUDA=ON -DCMAKE_CUDA_COMPILER=$(NVCC),-DRH_BUILD_CUDA=OFF)
CTEST_BUILD := native/build
JOBS ?= 2

.PHONY: run test setup native-ctest native-asan repeat-threads fuzz fuzz-native dist dist-check clean

run: setup
	$(VENV)/bin/renewable-huber demo

test: setup native-ctest native-asan repeat-threads
	$(VPY) -m pytest
	$(MAKE) fuzz
	$(MAKE) fuzz-native

# The tests that threads, their scheduling or allocation counts could make
# flaky, run again and again (C++: plain and under the sanitizers; Python:
# the model lock, the engine's threads, the GIL), so a test that fails one
# time in eight fails here instead of at random in a later landing.
THREAD_CTESTS := WorkerPool|SteadyState|Thread|Lease|StaggeredAllocator|OwnFailure|HostSliceCopier|ChunkedSliceStager|ReusePool|StagingSchedule
THREAD_PYTESTS := tests/backends/test_native_cpu_threads.py tests/test_model_lock.py tests/backends/test_native_cpu.py
REPEAT ?= 20
repeat-threads: native-ctest native-asan
	ctest --test-dir $(CTEST_BUILD) --repeat until-fail:$(REPEAT) -R '$(THREAD_CTESTS)' --output-on-failure
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir $(ASAN_BUILD) --repeat until-fail:10 -R '$(THREAD_CTESTS)' --output-on-failure
	for round in 1 2 3 4 5; do $(VPY) -m pytest -q -p no:cacheprovider $(THREAD_PYTESTS) -k "threads or lock or gil or thread" || exit 1; done

# The C++ unit tests (core and CPU engine) once more, built with
# AddressSanitizer and UndefinedBehaviorSanitizer, every report fatal
# (native/CMakeLists.txt RH_SANITIZE), in their own build folder.
ASAN_BUILD := native/build-asan
native-asan: $(STAMP)
	cmake -S native -B $(ASAN_BUILD) -G Ninja -DPython_EXECUTABLE=$(abspath $(VPY)) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRH_SANITIZE=ON -DRH_BUILD_TESTS=ON -DRH_BUILD_PYTHON=OFF -DRH_BUILD_CUDA=OFF > /dev/null
	cmake --build $(ASAN_BUILD) -j $(JOBS)
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1:strict_string_checks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 ctest --test-dir $(ASAN_BUILD) --output-on-failure

# Fuzzing (tests/fuzz/): checkpoint loading, input validation, the CSV/Parquet
# readers, 20 s each with atheris (coverage-guided) where it is installed,
# else a deterministic loop of seeded mutations of the committed corpora.
FUZZ_SECONDS ?= 20
fuzz: setup
	$(VPY) tests/fuzz/run_fuzz.py --seconds $(FUZZ_SECONDS)

# libFuzzer on the CPU engine's update entry point (native/tests/fuzz/), built
# with clang and AddressSanitizer/UndefinedBehaviorSanitizer in its own
# folder, FUZZ_SECONDS from the committed corpus (new inputs go to the build
# folder; a crash, hang, leak or sanitizer report fails the run and leaves
# its input there).
FUZZ_BUILD := native/build-fuzz
fuzz-native: $(STAMP)
	@command -v clang++ > /dev/null || { echo "fuzz-native: clang++ not found: the libFuzzer target is not built or run"; [ "$(RH_REQUIRE_FUZZ)" != "1" ]; }
	@command -v clang++ > /dev/null || exit 0; \
	cmake -S native -B $(FUZZ_BUILD) -G Ninja -DPython_EXECUTABLE=$(abspath $(VPY)) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_COMPILER=clang -DRH_FUZZ=ON -DRH_BUILD_TESTS=OFF -DRH_BUILD_PYTHON=OFF -DRH_BUILD_CUDA=OFF > /dev/null && \
	cmake --build $(FUZZ_BUILD) -j $(JOBS) --target rh_fuzz_cpu_update && \
	rm -rf $(FUZZ_BUILD)/corpus && mkdir -p $(FUZZ_BUILD)/corpus && \
	ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 $(FUZZ_BUILD)/rh_fuzz_cpu_update -max_total_time=$(FUZZ_SECONDS) -timeout=10 -max_len=8192 -print_final_stats=1 -artifact_prefix=$(FUZZ_BUILD)/ $(FUZZ_BUILD)/corpus tests/fuzz/corpus/native_cpu_update

setup: $(STAMP) $(NATIVE_STAMP) $(CUDA_STAMP)

$(VPY):
	$(PYTHON) -m venv $(VENV) || { echo "error: '$(PYTHON) -m venv' failed; on Debian install python3-venv"; exit 1; }
	$(VPY) -m pip install --quiet --upgrade pip

$(STAMP): $(VPY) pyproject.toml
	$(VPY) -m pip install --quiet -e '.[test,test-frameworks]'
	touch $@

# The C++ CPU engine: build requirements from PyPI (and Debian when missing),
# then the renewable-huber-native-cpu distribution into .venv.
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SOURCES) scripts/build_native_cpu.sh
	RH_BUILD_JOBS=$(JOBS) bash scripts/build_native_cpu.sh $(VPY) --no-ctest
	touch $@

# The CUDA engine: built and installed when nvcc is here (RH_REQUIRE_CUDA=1
# makes its absence an error).
$(CUDA_STAMP): $(STAMP) $(NATIVE_SOURCES) scripts/build_native_cuda.sh
	RH_BUILD_JOBS=$(JOBS) bash scripts/build_native_cuda.sh $(VPY)
	touch $@

# GoogleTest suites of the C++ core, the CPU engine and the CUDA engine's
# C ABI (with nvcc; its GPU tests skip without a device).
native-ctest: $(NATIVE_STAMP) $(CUDA_STAMP)
	cmake -S native -B $(CTEST_BUILD) -G Ninja -DPython_EXECUTABLE=$(abspath $(VPY)) -DRH_BUILD_TESTS=ON -DRH_BUILD_PYTHON=OFF $(CUDA_CMAKE) > /dev/null
	cmake --build $(CTEST_BUILD) -j $(JOBS)
	ctest --test-dir $(CTEST_BUILD) --output-on-failure

# Release artifacts (docs/distributions.md): the sdist and the three wheels
# into dist/, checked by scripts/release/check_dist.py; dist-check then
# installs them into a fresh environment without a compiler and replays the
# golden corpus through native_cpu.
dist: setup
	RH_BUILD_JOBS=$(JOBS) bash scripts/release/build_wheels.sh $(abspath $(VPY))

dist-check: dist
	bash scripts/release/clean_room_install.sh dist

clean:
	rm -rf $(VENV) native/build native/build-asan native/build-fuzz native/build-python-cpu native/build-python-cuda build-dist dist .pytest_cache
