#!/usr/bin/env bash
# The README's first command: install what is missing, build, start the
# platform in .odp/ and profile the demo workload end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
echo "==> building (first build takes several minutes on 2 cores)" >&2
cargo build --workspace --bins
echo "==> building the web UI (web/dist)" >&2
(cd web && npm ci --no-audit --no-fund && npm run build)
exec target/debug/odp-dev quickstart "$@"
