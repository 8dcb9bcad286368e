#!/usr/bin/env bash
# The README's first command: install what is missing, build, start the
# platform in .odp/ and profile the demo workload end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# Optimized binaries: reads of large profiles are several times faster.
echo "==> building (release; the first build takes about 10 minutes on 2 cores)" >&2
cargo build --release --workspace --bins
echo "==> building the web UI (web/dist)" >&2
(cd web && npm ci --no-audit --no-fund && npm run build)
exec target/release/odp-dev quickstart "$@"
