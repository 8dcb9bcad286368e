#!/usr/bin/env bash
# Builds and installs the development broker: Tansu 0.6.0 from crates.io
# with the SQLite engine and our patches (docs/tansu-group-recovery.md):
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
#                                sign every message in two headers).
#
# Each patched crate is downloaded and checked against the checksum in
# Tansu's own lock file, which builds every other crate at the version Tansu
# was released with.
set -euo pipefail

VERSION=0.6.0
FEATURES="${TANSU_FEATURES:-dynostore,libsql}"
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
lock="$work/tansu-$VERSION/Cargo.lock"
printf '\n[patch.crates-io]\n' >> "$work/tansu-$VERSION/Cargo.toml"
for patch in "$here"/patches/*.patch; do
  crate="$(basename "$patch" .patch)"
  sha="$(python3 - "$lock" "$crate" "$VERSION" <<'PY'
import re, sys
lock, crate, version = open(sys.argv[1]).read(), sys.argv[2], sys.argv[3]
m = re.search(r'name = "%s"\nversion = "%s"\nsource = "[^"]+"\nchecksum = "([0-9a-f]+)"' % (re.escape(crate), re.escape(version)), lock)
print(m.group(1) if m else "")
PY
)"
  [ -n "$sha" ] || { echo "install.sh: $crate $VERSION is not in Tansu's lock file" >&2; exit 1; }
  fetch_crate "$crate" "$sha"
  patch -d "$work/$crate-$VERSION" -p1 --quiet < "$patch"
  # A patched crate is a path dependency, which the lock file records
  # without a source or checksum.
  printf '%s = { path = "../%s-%s" }\n' "$crate" "$crate" "$VERSION" >> "$work/tansu-$VERSION/Cargo.toml"
  python3 - "$lock" "$crate" "$VERSION" <<'PY'
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
# built side by side on one machine; most of the rest is C: SQLite,
# aws-lc), and the broker still keeps up with every test's load. An
# operator can ask for more with TANSU_OPT_LEVEL=3.
CARGO_PROFILE_RELEASE_OPT_LEVEL="${TANSU_OPT_LEVEL:-1}" \
  cargo install --path "$work/tansu-$VERSION" --locked --force --features "$FEATURES"
