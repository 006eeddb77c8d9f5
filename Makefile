# reasonix build targets. `make test` is the test command CI runs.
CARGO ?= cargo
PREFIX ?= /usr/local
DESTDIR ?=
MUSL_TARGET := x86_64-unknown-linux-musl
STATIC_BIN := target/$(MUSL_TARGET)/release/reasonix
# The release archives `make dist` writes, one per target.
DIST_TARGETS ?= x86_64-unknown-linux-musl aarch64-unknown-linux-musl
# CI fails when the static binary grows past this. The design's limit is 6.0 MB (issue 34) and
# is NOT met: the config read once brought the binary to 5,821,624 bytes, then features the
# issues require added 491,520: Claude Code's print mode and the Agent SDK's control protocol
# (src/claude/), Claude's user config, the Guardian reviewer and the round caps (307,200), then
# the retained composition bundles, host-side /<profile> runs, the SDK's updatedInput and
# --session-id (155,648), then --fallback-model, Claude's api_retry messages, MCP prompts in
# print mode's init, usage per model and the TypeScript SDK's initialize read before the
# session opens (28,672). No single piece is a duplicate (cargo-bloat); meeting 6.0 MB means
# dropping one of those features or writing code only to save bytes, so the limit holds the
# line at the measured size plus about 0.3% until that is decided (issue 34's closing note;
# docs/guide/install.md).
MAX_STATIC_BYTES ?= 6333000
# The size recorded in docs/guide/install.md; `make static` prints the change against it
# (update both together).
RECORDED_STATIC_BYTES := 6313144
# `make bench BENCH_BEFORE=path/to/an/earlier/reasonix`: the start-up and round figures are
# measured for that build too, alternating, and printed with the ratio.
BENCH_BEFORE ?=
# What `make install` installs: the release build unless told otherwise.
BIN ?= target/release/reasonix
MAN_DIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASH_DIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_DIR = $(DESTDIR)$(PREFIX)/share/zsh/site-functions
FISH_DIR = $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d

.PHONY: build release static static-size test lint install uninstall dist repro bench demo clean \
  check-platforms check-darwin check-windows

build:
	$(CARGO) build

release:
	$(CARGO) build --release

# A fully static, position-independent musl binary, built the way the release archives are
# (scripts/dist.sh: reproducible flags; installs the rustup target and Debian's musl-tools for
# ring's C/asm parts when they are missing).
static:
	scripts/dist.sh build $(MUSL_TARGET)
	@$(MAKE) --no-print-directory static-size

static-size:
	@size=$$(stat -c %s $(STATIC_BIN)); \
	echo "static binary: $(STATIC_BIN) ($$size bytes; $$((size - $(RECORDED_STATIC_BYTES))) against the recorded $(RECORDED_STATIC_BYTES); limit $(MAX_STATIC_BYTES))"; \
	if [ $$size -gt $(MAX_STATIC_BYTES) ]; then \
	  echo "static binary is larger than $(MAX_STATIC_BYTES) bytes" >&2; exit 1; fi

# Release archives dist/reasonix-VERSION-TARGET.tar.gz and dist/SHA256SUMS for every target in
# DIST_TARGETS; each binary is smoke-tested first (under qemu-user when foreign).
dist:
	@for t in $(DIST_TARGETS); do scripts/dist.sh build $$t && scripts/dist.sh smoke $$t || exit 1; done
	scripts/dist.sh package $(DIST_TARGETS)

# Builds the x86_64 archive again in a fresh clone elsewhere and compares it with dist/'s.
repro:
	scripts/repro.sh $(MUSL_TARGET)

test:
	$(CARGO) test --all-targets

# Other platforms compile (no linking): `cargo check` of the library and binary for macOS and
# Windows. ring's C parts are compiled even for a check: for macOS with Debian's clang as a
# freestanding compiler (ring needs only stddef.h/stdint.h, which clang ships, plus a
# three-line TargetConditionals.h written here in place of Apple's SDK); for Windows with
# Debian's MinGW gcc. scripts/dist.sh installs the rustup targets and the apt packages.
DARWIN_TARGET := x86_64-apple-darwin
WINDOWS_TARGET := x86_64-pc-windows-gnu
DARWIN_INCLUDE := target/darwin-include
check-platforms: check-darwin check-windows

check-darwin:
	scripts/dist.sh toolchain $(DARWIN_TARGET)
	@mkdir -p $(DARWIN_INCLUDE) && printf '%s\n' '#define TARGET_OS_MAC 1' \
	  '#define TARGET_OS_OSX 1' '#define TARGET_OS_IPHONE 0' > $(DARWIN_INCLUDE)/TargetConditionals.h
	CC_x86_64_apple_darwin=clang AR_x86_64_apple_darwin=llvm-ar \
	  CFLAGS_x86_64_apple_darwin="-ffreestanding -nostdlibinc -DRING_CORE_NOSTDLIBINC=1 -isystem $(CURDIR)/$(DARWIN_INCLUDE)" \
	  RUSTFLAGS="-D warnings" $(CARGO) check --locked --target $(DARWIN_TARGET)

check-windows:
	scripts/dist.sh toolchain $(WINDOWS_TARGET)
	RUSTFLAGS="-D warnings" $(CARGO) check --locked --target $(WINDOWS_TARGET)

lint:
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

install: release
	install -d $(DESTDIR)$(PREFIX)/bin $(MAN_DIR) $(BASH_DIR) $(ZSH_DIR) $(FISH_DIR)
	install -m 0755 $(BIN) $(DESTDIR)$(PREFIX)/bin/reasonix
	$(BIN) man > $(MAN_DIR)/reasonix.1 && chmod 0644 $(MAN_DIR)/reasonix.1
	$(BIN) completions bash > $(BASH_DIR)/reasonix && chmod 0644 $(BASH_DIR)/reasonix
	$(BIN) completions zsh > $(ZSH_DIR)/_reasonix && chmod 0644 $(ZSH_DIR)/_reasonix
	$(BIN) completions fish > $(FISH_DIR)/reasonix.fish && chmod 0644 $(FISH_DIR)/reasonix.fish

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/bin/reasonix $(MAN_DIR)/reasonix.1 $(BASH_DIR)/reasonix \
	  $(ZSH_DIR)/_reasonix $(FISH_DIR)/reasonix.fish

# The long-session benches compare the static musl binary with the glibc build.
bench: static
	$(CARGO) build --release
	REASONIX_BENCH_STATIC=$(CURDIR)/$(STATIC_BIN) REASONIX_BENCH_BEFORE=$(BENCH_BEFORE) \
	  $(CARGO) test --release --test tests bench_ -- --ignored --nocapture --test-threads=1

# Runs the real agent loop on a copy of examples/demo with the model's replies served from
# the recording: no network, no API key.
DEMO_PROMPT := The test suite fails. Find the bug, fix it and make the tests pass.
demo:
	@echo "demo: building reasonix first (cargo build; a few minutes on the first run, seconds after)"
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
	rm -rf dist
