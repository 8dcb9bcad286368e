#!/usr/bin/env bash
# The README's second command: the whole test suite (unit, property,
# live sampling and end-to-end tests against a real broker and Postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# The end-to-end tests start the service binaries, so build them first.
cargo build --workspace --bins
cargo test --workspace -- --test-threads=3
