#!/usr/bin/env bash
# Installs what a fresh machine lacks to build, run and test ODP locally.
# Safe to run repeatedly. In parts, so that the quick start installs only
# what running the platform needs and builds the broker beside ODP itself:
#
#   scripts/bootstrap.sh            everything (the test suite's needs)
#   scripts/bootstrap.sh platform   a C compiler and make (librdkafka and
#                                   the demo), libc's symbols, the Postgres
#                                   server, Node.js (the web UI), py-spy
#   scripts/bootstrap.sh broker     the patched Tansu Kafka-compatible broker
#   scripts/bootstrap.sh mariadb    MariaDB (the MySQL backend)
#   scripts/bootstrap.sh tests      what only the tests use: debuginfod,
#                                   chromium, a JDK, perf, schemathesis and
#                                   the Pyroscope and OpenTelemetry clients
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
export PATH="$HOME/.cargo/bin:$PATH"

log() { printf '==> %s\n' "$*" >&2; }

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
APT_UPDATED=0
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    log "please install: $* (no apt-get on this machine)"; return 1
  fi
  if [ "$APT_UPDATED" -eq 0 ]; then $SUDO apt-get update -qq; APT_UPDATED=1; fi
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "$@" >/dev/null
}
# Whether pip has NAME at VERSION. (`pip show | grep -q` would fail under
# pipefail whenever grep's early exit breaks pip's pipe.)
pip_has() {
  [ "$(python3 -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p')" = "$2" ]
}
pip_install() {
  if ! command -v pip3 >/dev/null 2>&1 && ! python3 -m pip --version >/dev/null 2>&1; then
    apt_install python3-pip
  fi
  python3 -m pip install --quiet --disable-pip-version-check "$@" \
    || python3 -m pip install --quiet --disable-pip-version-check --break-system-packages "$@"
}

install_platform() {
  command -v cc >/dev/null 2>&1 || { log "installing a C compiler"; apt_install build-essential; }
  command -v make >/dev/null 2>&1 || { log "installing make"; apt_install make; }

  # The native plugin names libc's local functions (start_thread, clone3,
  # __libc_start_call_main) from its separate debug file, as perf does;
  # xz decodes MiniDebugInfo in the symbol tests.
  if ! ls /usr/lib/debug/.build-id >/dev/null 2>&1 || ! dpkg -s libc6-dbg >/dev/null 2>&1; then
    log "installing libc6-dbg (libc's symbol table, for naming thread roots)"
    apt_install libc6-dbg
  fi
  command -v xz >/dev/null 2>&1 || { log "installing xz-utils"; apt_install xz-utils; }
  if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
    log "installing the Postgres server binaries"
    apt_install postgresql
  fi

  # The web UI (web/) is built with Node and npm.
  if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    log "installing Node.js and npm"
    apt_install nodejs npm
  fi
  # The agent's python plugin runs py-spy (a static binary from PyPI).
  PY_SPY_VERSION=0.4.2
  if ! py-spy --version 2>/dev/null | grep -qx "py-spy $PY_SPY_VERSION"; then
    log "installing py-spy $PY_SPY_VERSION (the agent's python plugin)"
    pip_install "py-spy==$PY_SPY_VERSION"
    # pyenv puts new executables on PATH only through a rehash.
    if command -v pyenv >/dev/null 2>&1; then pyenv rehash; fi
    hash -r
  fi

  # perf_event_open on another process needs root, CAP_PERFMON, or a low
  # perf_event_paranoid.
  if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)" -gt 1 ]; then
    log "warning: perf_event_paranoid > 1 and not root: the agent cannot sample other processes."
    log "         run: sudo sysctl kernel.perf_event_paranoid=1"
  fi
}

install_mariadb() {
  # The MySQL backend's schema is tested against a private MariaDB server
  # (devstack/src/mariadb.rs), as the Postgres one is against a private cluster.
  if ! command -v mariadbd >/dev/null 2>&1 && [ ! -x /usr/sbin/mariadbd ]; then
    log "installing MariaDB (the MySQL backend's tests)"
    apt_install mariadb-server
  fi
}

install_broker() {
  # The local broker keeps its records in SQLite (the libsql feature), so a
  # broker restart loses nothing it acknowledged, and carries our patches
  # (scripts/tansu/patches: a consumer group recovers from a lost member, and
  # one failed storage request no longer stops the broker; see
  # docs/tansu-group-recovery.md) under a command line of our own
  # (scripts/tansu/broker). The marker names the hash of both: a tansu built
  # from anything else is rebuilt once.
  TANSU_HASH="$(cat "$ROOT"/scripts/tansu/patches/*.patch "$ROOT"/scripts/tansu/broker/Cargo.toml \
    "$ROOT"/scripts/tansu/broker/src/*.rs | sha256sum | cut -c1-12)"
  TANSU_MARKER="$HOME/.cargo/.odp-tansu-0.6.0-$TANSU_HASH"
  if ! command -v tansu >/dev/null 2>&1 || [ ! -e "$TANSU_MARKER" ]; then
    log "installing the Tansu broker (patched; about 10-25 minutes on 2 cores, once per machine)"
    "$ROOT/scripts/tansu/install.sh"
    touch "$TANSU_MARKER"
  fi
}

install_tests() {
  # The native plugin fetches stripped libraries' debug files from debuginfod
  # servers; its tests serve one with elfutils' own server.
  command -v debuginfod >/dev/null 2>&1 || { log "installing debuginfod (the debuginfod tests' server)"; apt_install debuginfod; }

  # The web UI's end-to-end tests drive Debian's chromium.
  if [ ! -x /usr/bin/chromium ]; then
    log "installing chromium (for the web UI's end-to-end tests)"
    apt_install chromium
  fi

  # The agent's jvm plugin is tested against a Java program compiled at test
  # time, and talks to JVMs the way jcmd does.
  if ! command -v javac >/dev/null 2>&1 || ! command -v jcmd >/dev/null 2>&1; then
    log "installing a JDK (the jvm plugin's tests)"
    apt_install openjdk-17-jdk-headless
  fi

  # schemathesis fuzzes the REST API from its OpenAPI document in the e2e
  # tests (tests/e2e/openapi.rs); pinned, as its checks change between
  # releases.
  SCHEMATHESIS_VERSION=4.32.5
  if ! schemathesis --version 2>/dev/null | grep -qx "schemathesis, version $SCHEMATHESIS_VERSION"; then
    log "installing schemathesis $SCHEMATHESIS_VERSION (pip)"
    pip_install "schemathesis==$SCHEMATHESIS_VERSION"
    hash -r
  fi

  # The Pyroscope ingest tests (tests/e2e/ingest_pyroscope.rs) profile a
  # Python program with Pyroscope's own SDK: 1.x speaks the push API, and
  # 0.8 (kept apart, on PYTHONPATH only in that test) the older /ingest.
  PYROSCOPE_VERSION=1.4.0
  PYROSCOPE_LEGACY_VERSION=0.8.7
  PYROSCOPE_LEGACY_DIR="$HOME/.cache/odp/pyroscope-io-$PYROSCOPE_LEGACY_VERSION"
  if ! pip_has pyroscope-io "$PYROSCOPE_VERSION"; then
    log "installing pyroscope-io $PYROSCOPE_VERSION (pip; the ingest tests' client)"
    pip_install "pyroscope-io==$PYROSCOPE_VERSION"
  fi
  if [ ! -d "$PYROSCOPE_LEGACY_DIR/pyroscope" ]; then
    log "installing pyroscope-io $PYROSCOPE_LEGACY_VERSION into $PYROSCOPE_LEGACY_DIR"
    pip_install --target "$PYROSCOPE_LEGACY_DIR" "pyroscope-io==$PYROSCOPE_LEGACY_VERSION"
  fi

  # The OTLP ingest tests (tests/e2e/ingest_otlp.rs) build profiles with
  # OpenTelemetry's own generated classes (opentelemetry-proto; 1.45.2 is
  # the newest and carries profiles/v1development with the request-level
  # dictionary ODP reads) and send them over gRPC with grpcio.
  OTEL_PROTO_VERSION=1.45.2
  GRPCIO_VERSION=1.85.3
  if ! pip_has opentelemetry-proto "$OTEL_PROTO_VERSION" || ! pip_has grpcio "$GRPCIO_VERSION"; then
    log "installing opentelemetry-proto $OTEL_PROTO_VERSION and grpcio $GRPCIO_VERSION (pip; the OTLP tests' producer and client)"
    pip_install "opentelemetry-proto==$OTEL_PROTO_VERSION" "grpcio==$GRPCIO_VERSION"
  fi
  # ... from a real perf capture (perf record -e cpu-clock, perf script).
  command -v perf >/dev/null 2>&1 || { log "installing perf (the OTLP tests' capture)"; apt_install linux-perf; }
}

[ "$#" -gt 0 ] || set -- platform mariadb broker tests
for part in "$@"; do
  case "$part" in
    platform) install_platform ;;
    mariadb) install_mariadb ;;
    broker) install_broker ;;
    tests) install_tests ;;
    *) log "unknown part: $part (platform, mariadb, broker or tests)"; exit 2 ;;
  esac
done
