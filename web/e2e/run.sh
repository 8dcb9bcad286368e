#!/usr/bin/env bash
# Playwright end-to-end tests of the web UI against the real platform: starts
# the quick start in a throw-away state dir (Kafka, Postgres, services, the
# demo profile), drives Debian's /usr/bin/chromium with playwright-core, and
# always stops the platform. Screenshots go to web/test-results/ (the
# issue-31 views' to web/e2e/artifacts/).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$HOME/.cargo/bin:$PATH"
[ -f web/dist/index.html ] || { echo "web/dist missing: run npm ci && npm run build in web/" >&2; exit 1; }
[ -x /usr/bin/chromium ] || { echo "/usr/bin/chromium missing: apt-get install -y chromium" >&2; exit 1; }
ODP_STATE_DIR=$(mktemp -d)
export ODP_STATE_DIR
# Postgres runs as its own user and must reach the cluster inside.
chmod 755 "$ODP_STATE_DIR"
stop() {
  target/debug/odp-dev down >/dev/null 2>&1 || true
  rm -rf "$ODP_STATE_DIR"
}
trap stop EXIT
echo "==> starting the platform in $ODP_STATE_DIR" >&2
if ! target/debug/odp-dev quickstart --duration-secs 5 >"$ODP_STATE_DIR/quickstart.out" 2>&1; then
  cat "$ODP_STATE_DIR/quickstart.out" >&2
  # The state dir goes with the platform: show the services' last words.
  for log in "$ODP_STATE_DIR"/logs/*; do
    [ -f "$log" ] && { echo "==> tail of $log" >&2; tail -n 20 "$log" >&2; }
  done
  exit 1
fi
tail -n 12 "$ODP_STATE_DIR/quickstart.out" >&2
export ODP_SERVICES_JSON="$ODP_STATE_DIR/services.json"
mkdir -p web/test-results
rm -rf web/e2e/artifacts && mkdir -p web/e2e/artifacts
node web/e2e/ui.test.mjs
