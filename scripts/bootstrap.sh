#!/usr/bin/env bash
# Installs what a fresh machine lacks to build and run ODP locally:
# a C compiler and make (librdkafka and the demo), the Postgres server
# binaries, and the Tansu Kafka-compatible broker. Safe to run repeatedly.
set -euo pipefail

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

command -v cc >/dev/null 2>&1 || { log "installing a C compiler"; apt_install build-essential; }
command -v make >/dev/null 2>&1 || { log "installing make"; apt_install make; }

if ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 && ! command -v initdb >/dev/null 2>&1; then
  log "installing the Postgres server binaries"
  apt_install postgresql
fi

# The web UI (web/) is built with Node and npm; its end-to-end tests drive
# Debian's chromium.
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  log "installing Node.js and npm"
  apt_install nodejs npm
fi
if [ ! -x /usr/bin/chromium ]; then
  log "installing chromium (for the web UI's end-to-end tests)"
  apt_install chromium
fi

export PATH="$HOME/.cargo/bin:$PATH"
if ! command -v tansu >/dev/null 2>&1; then
  log "installing the Tansu broker (cargo install, about 15-30 minutes on 2 cores, once per machine)"
  cargo install tansu --version 0.6.0 --locked --features dynostore
fi

# perf_event_open on another process needs root, CAP_PERFMON, or a low
# perf_event_paranoid.
if [ "$(id -u)" -ne 0 ] && [ "$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 2)" -gt 1 ]; then
  log "warning: perf_event_paranoid > 1 and not root: the agent cannot sample other processes."
  log "         run: sudo sysctl kernel.perf_event_paranoid=1"
fi
