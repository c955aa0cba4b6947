# rsbloom — see README.md. Every target installs what it needs (as root) or
# prints the command to run.
SHELL := /bin/bash
CARGO ?= cargo
MODULE := target/release/librsbloom.so
export RSBLOOM_MODULE ?= $(CURDIR)/$(MODULE)

# The release module, its debug info moved beside it (scripts/split-debug.sh).
build_module = $(CARGO) build --release && scripts/split-debug.sh $(MODULE)

.PHONY: all build run check lint test test-long fuzz fuzz-ci fuzz-build bench deps clean docker docker-stop copy

all: build

build:
	scripts/ensure-deps.sh run
	$(build_module)

## Start a foreground redis-server on 127.0.0.1:6379 with the module loaded.
run: build
	redis-server redis.conf.example

## Copy the module's keys between two servers (docs/copy.md):
## `make copy FROM=redis://host:6379 TO=redis://host:6380 [COPY_ARGS="--match 'bf:*' --dry-run"]`.
copy:
	$(CARGO) build --release -p rsbloom-copy
	target/release/rsbloom-copy --from "$(FROM)" --to "$(TO)" $(COPY_ARGS)

## The inner loop: build, lints, unit and property tests (no server).
check: lint
	$(CARGO) test --profile ci -p rsbloom-core -p rsbloom-copy
	$(CARGO) test --profile ci -p rsbloom --lib

## Clippy on every target of the workspace. Its lints are denied on the
## pinned toolchain only: a newer clippy's new lints are shown, not fatal,
## so a toolchain update cannot break a build (docs/testing.md).
CLIPPY_RUST := 1.95.0
CLIPPY_DENY = $(if $(filter $(CLIPPY_RUST),$(word 2,$(shell rustc --version))),-Dwarnings,)
## The family folders are declared through the `families!` macro, which
## rustfmt does not expand: `cargo fmt` never reaches them, so they are
## checked by name.
fmt_check = $(CARGO) fmt --all -- --check && rustfmt --edition 2021 --check src/*/*.rs

lint:
	scripts/ensure-deps.sh run
	@[ -n "$(CLIPPY_DENY)" ] || echo "lint: rustc is not $(CLIPPY_RUST): lints shown, not enforced"
	$(fmt_check)
	$(CARGO) clippy --profile ci --workspace --all-targets -- $(CLIPPY_DENY)

## LINT=1 (CI): the same lints while `make test` builds, clippy-driver being
## the workspace's rustc wrapper: the code is compiled once, not checked and
## then built. The benchmarks, which the tests do not build, get a check.
ifeq ($(LINT),1)
export RUSTC_WORKSPACE_WRAPPER = $(shell command -v clippy-driver)
export CLIPPY_ARGS = $(CLIPPY_DENY)
lint_benches = $(fmt_check) && $(CARGO) clippy --profile ci --workspace --benches -- $(CLIPPY_DENY)
endif

## Unit, property and integration tests on Redis 8.6 and Valkey 9.x, the
## server-facing subset also on Redis 7.0, Redis 8.0 and Valkey 8.0 (docs/servers.md
## §1), with the reference RedisBloom as differential oracle;
## RSBLOOM_SERVERS=redis7,valkey9 etc. runs every test on just those servers.
## Also the Docker images (Redis 8.6, Valkey 9) in containers
## (tests/shared/container.rs: a failed build or daemon start is reported there).
## The release module (fat LTO on one codegen unit: one core most of the time)
## and the images build beside the test binaries and the panic-test module
## (tests/shared/panic_barrier.rs), which shares their dependencies.
PANIC_MODULE := $(CURDIR)/target/panic-test/librsbloom.so
test:
	scripts/ensure-deps.sh test
	@scripts/servers.sh
	export DOCKER_HOST=$$(scripts/docker.sh host); \
	  { $(build_module) || exit 1; for s in redis valkey; do scripts/docker.sh build $$s; done; exit 0; } & module=$$!; \
	  $(CARGO) build --profile ci --lib --features panic-test \
	    && mkdir -p $(dir $(PANIC_MODULE)) && cp target/ci/librsbloom.so $(PANIC_MODULE) \
	    && $(CARGO) test --profile ci --workspace --no-run; built=$$?; \
	  wait $$module && [ $$built = 0 ] \
	  && RSBLOOM_PANIC_MODULE=$(PANIC_MODULE) $(CARGO) test --profile ci --workspace --no-fail-fast
	$(lint_benches)

## The Docker image (docs/docker.md): `make docker [DOCKER_SERVER=valkey]`,
## with the newest server of the matrix (built once by scripts/build-servers.sh).
## Starts a dockerd of its own where none answers (`make docker-stop` ends it).
DOCKER_SERVER ?= redis
DOCKER_IMAGE ?= rsbloom:$(DOCKER_SERVER)
docker:
	scripts/ensure-deps.sh run
	$(build_module)
	scripts/docker.sh build $(DOCKER_SERVER) $(DOCKER_IMAGE)

docker-stop:
	scripts/docker.sh stop

## The long differential run: 1,000,000 random commands per family.
test-long:
	scripts/ensure-deps.sh test
	$(build_module)
	RSBLOOM_DIFF_OPS=1000000 $(CARGO) test --profile ci --test shared -- --nocapture differential::
	for f in cms topk tdigest; do \
	  RSBLOOM_DIFF_OPS=1000000 $(CARGO) test --profile ci --test $$f -- --nocapture differential:: || exit 1; \
	done
	RSBLOOM_DIFF_OPS=1000000 $(CARGO) test --profile ci --test valkey_bloom -- --nocapture differential

## Fuzzing (fuzz/README.md): cargo-fuzz on the stable toolchain through
## RUSTC_BOOTSTRAP (cargo-fuzz needs -Z flags). `make fuzz` runs every target
## for FUZZ_SECONDS; `make fuzz-ci` for FUZZ_CI_SECONDS each; FUZZ_JOBS
## targets at a time (libFuzzer uses one core). New corpus entries go to
## fuzz/work/ (not committed); crashes to fuzz/artifacts/.
# Every target: the files of fuzz/src/bin/.
FUZZ_TARGETS := $(sort $(basename $(notdir $(wildcard fuzz/src/bin/*.rs))))
FUZZ_SECONDS ?= 60
FUZZ_CI_SECONDS ?= 5
FUZZ_JOBS ?= $(shell nproc)
FUZZ_FLAGS ?=

fuzz-build:
	@command -v cargo-fuzz >/dev/null || $(CARGO) install --locked cargo-fuzz
	cd fuzz && RUSTC_BOOTSTRAP=1 $(CARGO) fuzz build -O

# A short campaign (fuzz/campaign.sh): fails naming the target on a finding.
fuzz_run = RUNS=-1 SECONDS_EACH=$(1) PARALLEL=$(FUZZ_JOBS) NICE=0 FUZZ_FLAGS="$(FUZZ_FLAGS)" \
	fuzz/campaign.sh $(FUZZ_TARGETS)

fuzz: fuzz-build
	$(call fuzz_run,$(FUZZ_SECONDS))

fuzz-ci: fuzz-build
	$(call fuzz_run,$(FUZZ_CI_SECONDS))

## Side-by-side benchmark against the reference RedisBloom 2.8.2 (interleaved
## rounds; prints the table of README "Performance"), then the core's
## criterion micro-benchmarks (shortened). BENCH_ARGS: e.g. --rounds 7, --quick.
bench:
	scripts/ensure-deps.sh test
	$(build_module)
	python3 bench/bench.py $(BENCH_ARGS)
	$(CARGO) bench -p rsbloom-core --bench core -- --warm-up-time 1 --measurement-time 2 --noplot

clean:
	$(CARGO) clean
