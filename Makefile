# reasonix build targets. `make test` is the test command CI runs.
CARGO ?= cargo
PREFIX ?= /usr/local
DESTDIR ?=
MUSL_TARGET := x86_64-unknown-linux-musl
STATIC_BIN := target/$(MUSL_TARGET)/release/reasonix

.PHONY: build release static test lint install bench demo clean

build:
	$(CARGO) build

release:
	$(CARGO) build --release

# A fully static, position-independent musl binary. Installs the rustup target and
# Debian's musl-tools (for ring's C/asm parts) when they are missing.
static:
	@rustup target list --installed 2>/dev/null | grep -qx $(MUSL_TARGET) || rustup target add $(MUSL_TARGET)
	@command -v musl-gcc >/dev/null 2>&1 || { \
	  if command -v apt-get >/dev/null 2>&1; then \
	    (apt-get update -qq || true) && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq musl-tools >/dev/null; \
	  else echo "static: musl-gcc not found; install musl-tools" >&2; exit 1; fi; }
	CC_x86_64_unknown_linux_musl=musl-gcc \
	RUSTFLAGS="-C target-feature=+crt-static -C relocation-model=pie" \
	  $(CARGO) build --release --target $(MUSL_TARGET)
	@ls -l $(STATIC_BIN) | awk '{print "static binary: " $$9 " (" $$5 " bytes)"}'

test:
	$(CARGO) test --all-targets

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

install: release
	install -d $(DESTDIR)$(PREFIX)/bin
	install -m 0755 target/release/reasonix $(DESTDIR)$(PREFIX)/bin/reasonix

# The long-session benches compare the static musl binary with the glibc build.
bench: static
	$(CARGO) build --release
	REASONIX_BENCH_STATIC=$(CURDIR)/$(STATIC_BIN) \
	  $(CARGO) test --release --test tests bench_ -- --ignored --nocapture --test-threads=1

# Runs the real agent loop on a copy of examples/demo with the model's replies served from
# the recording: no network, no API key.
DEMO_PROMPT := The test suite fails. Find the bug, fix it and make the tests pass.
demo:
	$(CARGO) build -q
	@tmp=$$(mktemp -d) && \
	cp examples/demo/calc.py examples/demo/test_calc.py examples/demo/README.md "$$tmp"/ && \
	echo "demo: working in $$tmp (a copy of examples/demo); replies replayed from examples/demo/session.jsonl" && \
	REASONIX_HOME="$$tmp.home" ./target/debug/reasonix -C "$$tmp" run \
	  --replay "$(CURDIR)/examples/demo/session.jsonl" "$(DEMO_PROMPT)" && \
	echo "demo: python3 -m unittest in $$tmp after the run:" && \
	cd "$$tmp" && python3 -m unittest

clean:
	$(CARGO) clean
