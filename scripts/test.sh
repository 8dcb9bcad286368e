#!/usr/bin/env bash
# The README's second command: the whole test suite (unit, property,
# live sampling and end-to-end tests against a real broker and Postgres).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh platform mariadb tests
export PATH="$HOME/.cargo/bin:$PATH"
# The broker (once per machine) builds beside the checks and the build
# below, which leave a core idle for minutes at a time; the tests wait for
# it.
mkdir -p target
scripts/bootstrap.sh broker > target/broker-build.log 2>&1 &
broker_build=$!
cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
# Doc links that point at moved or removed modules fail here.
scripts/doc-links.sh
# The end-to-end tests start the service binaries, so build them first,
# with the tests: built alone, the binaries would leave out the features
# only the tests' dependencies turn on (tokio's `test-util`, rand's
# `std`), and `cargo test` would build tokio and all above it again.
cargo build --workspace --bins --tests
if ! wait "$broker_build"; then
  tail -n 40 target/broker-build.log >&2
  echo "the broker failed to build (whole log: target/broker-build.log)" >&2
  exit 1
fi
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
