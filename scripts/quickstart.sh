#!/usr/bin/env bash
# The README's first command: install what is missing, build, start the
# platform in .odp/ and profile the demo workload end to end.
set -euo pipefail
cd "$(dirname "$0")/.."
bootstrap_parts=(platform)
case " $* " in *mysql*) bootstrap_parts+=(mariadb) ;; esac
scripts/bootstrap.sh "${bootstrap_parts[@]}"
export PATH="$HOME/.cargo/bin:$PATH"
# The broker (once per machine) builds beside ODP: each build leaves a
# core idle for minutes at a time (C libraries, the last crates, linking).
mkdir -p target
scripts/bootstrap.sh broker > target/broker-build.log 2>&1 &
broker_build=$!
# Optimized binaries: reads of large profiles are several times faster.
echo "==> building (release; the first build takes about 10 minutes on 2 cores)" >&2
cargo build --release --workspace --bins
echo "==> building the web UI (web/dist)" >&2
# The bundle alone: generating the API types and type-checking them
# (`npm run build`) is the test command's, and takes the broker's build
# some CPU here.
(cd web && npm ci --no-audit --no-fund && npm run bundle)
if ! wait "$broker_build"; then
  tail -n 40 target/broker-build.log >&2
  echo "==> the broker failed to build (whole log: target/broker-build.log)" >&2
  exit 1
fi
if [ -s target/broker-build.log ]; then
  echo "==> the broker is built (its log: target/broker-build.log)" >&2
fi
exec target/release/odp-dev quickstart "$@"
