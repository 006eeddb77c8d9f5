#!/usr/bin/env bash
# Reproducibility check: builds the release archive of each TARGET again from a fresh clone of
# the same commit in another directory (its own target dir, another time) and compares it
# byte for byte with the one in dist/ (run `make dist` first).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd -P)
commit=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "repro: the work tree has uncommitted changes; dist/ would not match a clean clone" >&2
  exit 1
fi
tmp=$(mktemp -d /tmp/reasonix-repro.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
git clone -q --no-checkout "$root" "$tmp/reasonix"
git -C "$tmp/reasonix" checkout -q --detach "$commit"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -n 1)
status=0
for target in "$@"; do
  (cd "$tmp/reasonix" && CARGO_TARGET_DIR="$tmp/target" scripts/dist.sh build "$target" >/dev/null \
    && CARGO_TARGET_DIR="$tmp/target" OUT="$tmp/out" scripts/dist.sh package "$target" >/dev/null)
  archive=reasonix-$version-$target.tar.gz
  first=$(sha256sum < "dist/$archive" | cut -d' ' -f1)
  second=$(sha256sum < "$tmp/out/$archive" | cut -d' ' -f1)
  if [ "$first" = "$second" ]; then
    echo "repro: $archive is reproducible (sha256 $first, built in $root and $tmp/reasonix)"
  else
    echo "repro: $archive differs: $first in dist/, $second from the clone" >&2
    diff <(tar -tvzf "dist/$archive") <(tar -tvzf "$tmp/out/$archive") >&2 || true
    status=1
  fi
done
exit $status
