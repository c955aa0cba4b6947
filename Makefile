# rsbloom — see README.md. Every target installs what it needs (as root) or
# prints the command to run.
SHELL := /bin/bash
CARGO ?= cargo
MODULE := target/release/librsbloom.so
export RSBLOOM_MODULE ?= $(CURDIR)/$(MODULE)

.PHONY: all build run test test-long fuzz bench deps clean

all: build

build:
	scripts/ensure-deps.sh run
	$(CARGO) build --release

## Start a foreground redis-server on 127.0.0.1:6379 with the module loaded.
run: build
	redis-server redis.conf.example

## Unit, property and integration tests (redis-server and valkey-server, and
## the reference RedisBloom as differential oracle).
test:
	scripts/ensure-deps.sh test
	$(CARGO) build --release
	$(CARGO) test --release --workspace

## The long differential run: 1,000,000 random commands per family.
test-long:
	scripts/ensure-deps.sh test
	$(CARGO) build --release
	RSBLOOM_DIFF_OPS=1000000 $(CARGO) test --release --test differential -- --nocapture

## Side-by-side benchmark against the reference RedisBloom 2.8.2 (interleaved
## rounds; prints the table of README "Performance"), then the core's
## criterion micro-benchmarks (shortened). BENCH_ARGS: e.g. --rounds 7, --quick.
bench:
	scripts/ensure-deps.sh test
	$(CARGO) build --release
	python3 bench/bench.py $(BENCH_ARGS)
	$(CARGO) bench -p rsbloom-core --bench core -- --warm-up-time 1 --measurement-time 2 --noplot

clean:
	$(CARGO) clean
