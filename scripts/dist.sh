#!/usr/bin/env bash
# Release builds and archives, reproducible: the same commit gives byte-identical archives
# whatever directory it is built in and whenever.
#
#   scripts/dist.sh toolchain TARGET...   install the rustup target and the C/link tools
#   scripts/dist.sh build TARGET          static musl release binary of TARGET
#   scripts/dist.sh smoke TARGET          run the binary (under qemu-user when foreign)
#   scripts/dist.sh package TARGET...     dist/reasonix-VERSION-TARGET.tar.gz + SHA256SUMS
#
# Targets: x86_64-unknown-linux-musl, aarch64-unknown-linux-musl. The C parts (ring) build with
# Debian's musl-gcc (x86_64) or gcc-aarch64-linux-gnu (aarch64); Rust links its own musl
# (self-contained crt and libc), so no musl cross toolchain is needed.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)

CARGO=${CARGO:-cargo}
OUT=${OUT:-dist}
target_dir=${CARGO_TARGET_DIR:-target}
cargo_home=${CARGO_HOME:-$HOME/.cargo}
rustup_home=${RUSTUP_HOME:-$HOME/.rustup}
export LC_ALL=C TZ=UTC

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
# The commit's time stamps everything that carries a time, so a later build is the same.
if [ -z "${SOURCE_DATE_EPOCH:-}" ]; then
  SOURCE_DATE_EPOCH=$(git log -1 --format=%ct 2>/dev/null || echo 0)
fi
export SOURCE_DATE_EPOCH

apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "dist: missing $*; install it (Debian packages: $*)" >&2
    exit 1
  fi
  (apt-get update -qq || true)
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null
}

toolchain() {
  for target in "$@"; do
    rustup target list --installed 2>/dev/null | grep -qx "$target" || rustup target add "$target"
    case "$target" in
      x86_64-unknown-linux-musl)
        command -v musl-gcc >/dev/null 2>&1 || apt_install musl-tools ;;
      aarch64-unknown-linux-musl)
        command -v aarch64-linux-gnu-gcc >/dev/null 2>&1 || apt_install gcc-aarch64-linux-gnu
        if [ "$(uname -m)" != aarch64 ]; then
          command -v qemu-aarch64-static >/dev/null 2>&1 || apt_install qemu-user-static
        fi ;;
      # Check-only targets (make check-platforms): a C compiler for ring's build script.
      x86_64-apple-darwin)
        { command -v clang >/dev/null 2>&1 && command -v llvm-ar >/dev/null 2>&1; } \
          || apt_install clang llvm ;;
      x86_64-pc-windows-gnu)
        command -v x86_64-w64-mingw32-gcc >/dev/null 2>&1 || apt_install gcc-mingw-w64-x86-64 ;;
      *) echo "dist: unknown target $target" >&2; exit 2 ;;
    esac
  done
}

# The paths that differ between checkouts and machines are rewritten in everything the
# compilers record (panic locations, C file names), so only the source decides the bytes.
build() {
  local target=$1
  local flags=(
    -C target-feature=+crt-static
    -C relocation-model=pie
    "--remap-path-prefix=$root=/reasonix"
    "--remap-path-prefix=$cargo_home=/cargo"
    "--remap-path-prefix=$rustup_home=/rustup"
  )
  local cflags="-ffile-prefix-map=$root=/reasonix -ffile-prefix-map=$cargo_home=/cargo"
  case "$target" in
    x86_64-unknown-linux-musl)
      # Packed relative relocations (DT_RELR, read by musl's static-pie start-up): the
      # position-independent binary's relocation table shrinks from about 117 KB to a few.
      flags+=(-C link-arg=-Wl,-z,pack-relative-relocs)
      export CC_x86_64_unknown_linux_musl=musl-gcc ;;
    aarch64-unknown-linux-musl)
      export CC_aarch64_unknown_linux_musl=aarch64-linux-gnu-gcc
      export AR_aarch64_unknown_linux_musl=aarch64-linux-gnu-ar
      export CARGO_TARGET_AARCH64_UNKNOWN_LINUX_MUSL_LINKER=aarch64-linux-gnu-gcc ;;
  esac
  export "CFLAGS_${target//-/_}=$cflags"
  local IFS=$'\x1f'
  CARGO_ENCODED_RUSTFLAGS="${flags[*]}" "$CARGO" build --release --locked --target "$target"
  unset IFS
}

bin_of() {
  echo "$target_dir/$1/release/reasonix"
}

# Runs the built binary of TARGET with ARGS: directly when the machine runs it, else under
# qemu-user.
run_bin() {
  local target=$1
  shift
  local arch=${target%%-*}
  if [ "$arch" = "$(uname -m)" ]; then
    "$(bin_of "$target")" "$@"
  else
    "qemu-$arch-static" "$(bin_of "$target")" "$@"
  fi
}

smoke() {
  local target=$1 home
  home=$(mktemp -d)
  trap 'rm -rf "$home"' RETURN
  local version_line
  version_line=$(run_bin "$target" --version)
  echo "$version_line"
  case "$version_line" in
    *"$target"*) ;;
    *) echo "dist: $target binary reports the wrong target: $version_line" >&2; return 1 ;;
  esac
  HOME=$home REASONIX_HOME=$home run_bin "$target" tools | grep -q '^read_file' \
    || { echo "dist: $target binary: \`reasonix tools\` lacks read_file" >&2; return 1; }
  # A whole run: the model's replies replayed from the demo's recording, its edits and bash
  # calls carried out for real. The jail is off: under qemu-user the sandbox's seccomp filter
  # would be the emulator's, which tests nothing about the binary.
  local work=$home/work
  mkdir -p "$work"
  cp examples/demo/calc.py examples/demo/test_calc.py "$work"/
  printf '[sandbox]\nbash = "off"\n' > "$home/config.toml"
  HOME=$home REASONIX_HOME=$home run_bin "$target" -C "$work" run --permission-mode yolo \
    --output-format json --replay "$root/examples/demo/session.jsonl" \
    "The test suite fails. Find the bug, fix it and make the tests pass." > "$home/out.json"
  grep -q '"subtype":"success"' "$home/out.json" \
    || { echo "dist: $target binary: the replayed run did not succeed:" >&2; cat "$home/out.json" >&2; return 1; }
  if command -v python3 >/dev/null 2>&1; then
    (cd "$work" && python3 -m unittest -q 2>/dev/null) \
      || { echo "dist: $target binary: the replayed run did not fix the demo" >&2; return 1; }
  fi
  echo "dist: $target smoke test passed (--version, tools, a replayed run)"
}

package() {
  mkdir -p "$OUT"
  local stage
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' RETURN
  # The man page and completions are target-independent: written once, by a binary this
  # machine runs.
  local docs=$stage/docs host=""
  for target in "$@"; do
    [ "${target%%-*}" = "$(uname -m)" ] && host=$target
  done
  mkdir -p "$docs/completions"
  local gen=(run_bin "${host:-$1}")
  "${gen[@]}" man > "$docs/reasonix.1"
  "${gen[@]}" completions bash > "$docs/completions/reasonix.bash"
  "${gen[@]}" completions zsh > "$docs/completions/_reasonix"
  "${gen[@]}" completions fish > "$docs/completions/reasonix.fish"
  local archives=()
  for target in "$@"; do
    local name=reasonix-$version-$target
    local dir=$stage/$name
    mkdir -p "$dir/completions"
    install -m 0755 "$(bin_of "$target")" "$dir/reasonix"
    install -m 0644 "$docs/reasonix.1" "$dir/reasonix.1"
    install -m 0644 "$docs"/completions/* "$dir/completions/"
    install -m 0644 README.md README.zh-CN.md LICENSE reasonix.example.toml "$dir/"
    chmod 0755 "$dir" "$dir/completions"
    # Sorted entries, one owner and one time for all, no gzip name or time: the archive is a
    # function of the files' bytes.
    tar --sort=name --format=gnu --mtime="@$SOURCE_DATE_EPOCH" --owner=0 --group=0 \
      --numeric-owner -C "$stage" -cf - "$name" | gzip -9 -n > "$OUT/$name.tar.gz"
    archives+=("$name.tar.gz")
  done
  (cd "$OUT" && sha256sum "${archives[@]}" > SHA256SUMS && cat SHA256SUMS)
  for archive in "${archives[@]}"; do
    ls -l "$OUT/$archive" | awk '{print "dist: " $9 " (" $5 " bytes)"}'
  done
}

command=${1:-}
shift || true
case "$command" in
  toolchain) toolchain "$@" ;;
  build) toolchain "$1" && build "$1" ;;
  smoke) smoke "$1" ;;
  package) package "$@" ;;
  *) sed -n '2,12p' "$0" >&2; exit 2 ;;
esac
