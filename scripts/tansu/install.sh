#!/usr/bin/env bash
# Builds and installs the development broker as `tansu`: Tansu 0.6.0's
# broker from crates.io with the SQLite engine and our patches
# (docs/tansu-group-recovery.md), run by a command line of our own
# (broker/: the `broker` command alone, as the dev stack runs it):
#
#   patches/tansu-broker.patch   the group coordinator recovers a group
#                                after a lost member or leader;
#   patches/tansu-storage.patch  one failed storage request, one whose
#                                client left, or a produce under an epoch
#                                the broker never issued (it panicked) no
#                                longer stops the storage for every later
#                                request; and the SQLite engine indexes
#                                record headers, whose lookups otherwise
#                                scan every header of the broker (agents
#                                sign every message in two headers); and
#                                the in-memory engine fetches from a
#                                batch's offset by key instead of listing
#                                every batch of the partition (each fetch
#                                cost as much as the topic held), and from
#                                inside a batch starts with that batch, as
#                                Apache Kafka does.
#   Both also build rustls on its `ring` provider instead of the default
#   aws-lc, whose C build was one of the longest steps of the broker's
#   build; the dev broker serves plain TCP.
#
# Each patched crate is downloaded and checked against the checksum in
# Tansu's own lock file, which builds every other crate at the version Tansu
# was released with. Installs into $CARGO_HOME/bin, or TANSU_INSTALL_DIR.
set -euo pipefail

VERSION=0.6.0
TANSU_SHA=4fdd85473ec265140488cf8d55e82b844f5c051c8916fabdd4a71156ac053f6d
here="$(cd "$(dirname "$0")" && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT

fetch_crate() { # name sha256
  local file="$work/$1-$VERSION.crate"
  curl -sSfL --retry 3 -o "$file" "https://static.crates.io/crates/$1/$1-$VERSION.crate"
  echo "$2  $file" | sha256sum --check --quiet -
  tar -xzf "$file" -C "$work"
}

fetch_crate tansu "$TANSU_SHA"
crate="$work/odp-tansu"
cp -r "$here/broker" "$crate"
lock="$crate/Cargo.lock"
cp "$work/tansu-$VERSION/Cargo.lock" "$lock"
printf '\n[patch.crates-io]\n' >> "$crate/Cargo.toml"
for patch in "$here"/patches/*.patch; do
  patched="$(basename "$patch" .patch)"
  sha="$(python3 - "$lock" "$patched" "$VERSION" <<'PY'
import re, sys
lock, crate, version = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
m = re.search(r'name = "%s"\nversion = "%s"\nsource = "[^"]+"\nchecksum = "([0-9a-f]+)"' % (re.escape(crate), re.escape(version)), lock)
print(m.group(1) if m else "")
PY
)"
  [ -n "$sha" ] || { echo "install.sh: $patched $VERSION is not in Tansu's lock file" >&2; exit 1; }
  fetch_crate "$patched" "$sha"
  patch -d "$work/$patched-$VERSION" -p1 --quiet < "$patch"
  # A patched crate is a path dependency, which the lock file records
  # without a source or checksum.
  printf '%s = { path = "../%s-%s" }\n' "$patched" "$patched" "$VERSION" >> "$crate/Cargo.toml"
  python3 - "$lock" "$patched" "$VERSION" <<'PY'
import re, sys
path, crate, version = sys.argv[1:]
lock, n = re.subn(
    r'(name = "%s"\nversion = "%s"\n)source = "[^"]+"\nchecksum = "[^"]+"\n' % (re.escape(crate), re.escape(version)),
    r"\1", open(path).read())
assert n == 1, crate
open(path, "w").write(lock)
PY
done
# The broker serves a development stack and the tests, not production:
# LLVM's cheapest optimising level takes a fifth off the build, the
# longest step of a fresh quick start (19.3 against 23.9 CPU-minutes, both
# built side by side on one machine; most of the rest is C: SQLite, zstd),
# and the broker still keeps up with every test's load. An operator can ask
# for more with TANSU_OPT_LEVEL=3. Not `--locked`: the lock file is
# Tansu's, whose root package this crate replaces, so cargo drops what only
# Tansu's other tools used and keeps every other version as locked.
CARGO_PROFILE_RELEASE_OPT_LEVEL="${TANSU_OPT_LEVEL:-1}" CARGO_TARGET_DIR="$work/target" \
  cargo build --release --manifest-path "$crate/Cargo.toml"
bin_dir="${TANSU_INSTALL_DIR:-${CARGO_HOME:-$HOME/.cargo}/bin}"
mkdir -p "$bin_dir"
install -m 755 "$work/target/release/tansu" "$bin_dir/tansu"
