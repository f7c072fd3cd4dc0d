# Tessera: the two entry points are `make demo` and `make test`. Both install
# what they need (Debian packages), configure and build, and are quick when
# everything is already in place.

SHELL := /bin/bash
BUILD ?= build
FUZZ_BUILD ?= $(BUILD)/fuzz
VENV := $(BUILD)/venv
LLVM_PREFIX := /usr/lib/llvm-22
JOBS ?= $(shell nproc)
FUZZ_SECONDS ?= 30

APT_PACKAGES := cmake ninja-build ccache python3 clang-22 lld-22 llvm-22-dev \
  llvm-22-tools libmlir-22-dev mlir-22-tools libclang-rt-22-dev libgtest-dev \
  libxtensor-dev python3-numpy python3-pytest python3-venv libomp-22-dev \
  python3-dev python3-tqdm dataset-fashion-mnist
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
export CCACHE_BASEDIR := $(CURDIR)

CMAKE_FLAGS := -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMLIR_DIR=$(LLVM_PREFIX)/lib/cmake/mlir \
  -DLLVM_EXTERNAL_LIT=$(LLVM_PREFIX)/bin/lit \
  -DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22 \
  -DLLVM_USE_LINKER=lld -DCMAKE_C_COMPILER_LAUNCHER=ccache \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DPython3_EXECUTABLE=/usr/bin/python3


.PHONY: all deps pydeps build test pip-check demo docs fuzz fuzz-build clean

all: build

# Installs the Debian packages that are missing (nothing when all are there).
deps:
	@missing=$$(for p in $(APT_PACKAGES); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
	  echo "Installing Debian packages:" $$missing; \
	  $(SUDO) apt-get update -q && \
	  DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -q $$missing; \
	fi

$(BUILD)/build.ninja: | deps $(VENV)/.installed
	cmake -S . -B $(BUILD) $(CMAKE_FLAGS) -DTESSERA_WERROR=ON \
	  -DPython_EXECUTABLE=$(CURDIR)/$(VENV)/bin/python

# The test suite's Python packages (python/requirements-test.txt) in a
# virtual environment that also sees Debian's numpy and pytest.
$(VENV)/.installed: python/requirements-test.txt | deps
	/usr/bin/python3 -m venv --system-site-packages $(VENV)
	$(VENV)/bin/python -m pip install -q --disable-pip-version-check \
	  -r python/requirements-test.txt
	touch $@

pydeps: $(VENV)/.installed

build: deps pydeps $(BUILD)/build.ninja
	ninja -C $(BUILD) -j $(JOBS)

# The whole suite: lit IR tests, gtest unit tests, CPU numerics against
# NumPy (pytest), and a short fuzzing run of the parser, verifiers and shape
# inference under ASan+UBSan.
test: build pydeps fuzz-build
	ninja -C $(BUILD) check-tessera
	$(MAKE) --no-print-directory pip-check
	$(MAKE) --no-print-directory fuzz FUZZ_SECONDS=$(FUZZ_SECONDS)

# `pip install .` into a scratch environment and a smoke test of the result
# (the first run builds the package in build/wheel: minutes).
pip-check: deps
	@./test/pip/run.sh $(BUILD)

# The Python API reference from the docstrings (docs/api): HTML in
# $(BUILD)/docs/api; a warning is an error.
docs: build
	PYTHONPATH=$(BUILD)/python $(VENV)/bin/python -m sphinx -W --keep-going \
	  -q -b html docs/api $(BUILD)/docs/api
	@echo "API reference: $(BUILD)/docs/api/index.html"

demo: build
	@./examples/demo.sh $(BUILD)/bin/tessera-opt $(BUILD)/bin/tessera-run \
	  $(VENV)/bin/python

# The sanitizer build also skips precompiled headers, so it catches a source
# file that forgets an include the PCH happened to provide.
$(FUZZ_BUILD)/build.ninja: | deps
	cmake -S . -B $(FUZZ_BUILD) $(CMAKE_FLAGS) \
	  -DTESSERA_ENABLE_FUZZER=ON -DTESSERA_SANITIZE=ON -DTESSERA_USE_PCH=OFF \
	  -DTESSERA_ENABLE_PYTHON=OFF

fuzz-build: deps $(FUZZ_BUILD)/build.ninja
	ninja -C $(FUZZ_BUILD) -j $(JOBS) tessera-fuzz

# `make fuzz FUZZ_SECONDS=600` is the long run; crashes land in
# $(FUZZ_BUILD)/artifacts and fail the target.
fuzz: fuzz-build
	@./tools/tessera-fuzz/run.sh $(FUZZ_BUILD) $(FUZZ_SECONDS)

clean:
	rm -rf $(BUILD)
