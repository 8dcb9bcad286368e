#!/usr/bin/env bash
# The README's second command: the whole test suite (unit, property,
# live sampling and end-to-end tests against a real broker and Postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# Doc links that point at moved or removed modules fail here.
scripts/doc-links.sh
# The end-to-end tests start the service binaries, so build them first.
cargo build --workspace --bins
log=$(mktemp)
trap 'rm -f "$log"' EXIT
cargo test --workspace -- --test-threads=3 2>&1 | tee "$log"
# The web UI: Vitest unit tests of the flame graph layout, then Playwright
# against a real platform (web/e2e/run.sh); either failing fails the script.
(cd web && npm ci --no-audit --no-fund && npm test && npm run build)
web/e2e/run.sh
# cargo's last line is the (empty) doc-test run of the last crate; end with
# the totals over every test binary instead.
awk '/^test result:/ { passed += $4; failed += $6 } END { printf "summary: %d passed, %d failed\n", passed, failed }' "$log"
