#!/usr/bin/env bash
# Prints the path of a Prometheus server for the dashboards' integration
# test (grafana/prometheus_test.go), fetching one if needed: the Debian or
# Ubuntu package, downloaded with `apt-get download` and unpacked with
# `dpkg -x` into the user's cache directory, so no root is needed. Used by
# .ci/run; by hand:
#
#   export GRIDBED_PROMETHEUS="$(grafana/install-prometheus.sh)"
#
# Exits non-zero (and prints nothing on stdout) when there is no Prometheus
# and apt cannot fetch one.
set -euo pipefail

if [ -n "${GRIDBED_PROMETHEUS:-}" ] && [ -x "$GRIDBED_PROMETHEUS" ]; then
	echo "$GRIDBED_PROMETHEUS"
	exit 0
fi
if command -v prometheus >/dev/null 2>&1; then
	command -v prometheus
	exit 0
fi

# The same directory the test looks in (Go's os.UserCacheDir on Linux).
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gridbed/prometheus"
bin="$cache/usr/bin/prometheus"
if [ -x "$bin" ] && "$bin" --version >/dev/null 2>&1; then
	echo "$bin"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
	echo "install-prometheus: no apt-get/dpkg here; install Prometheus and put it on PATH or set GRIDBED_PROMETHEUS" >&2
	exit 1
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# apt-get download needs the package lists (apt-get update, done by the
# image or by root); it writes the .deb into the current directory.
if ! (cd "$tmp" && apt-get download prometheus >&2); then
	echo "install-prometheus: apt-get download prometheus failed (no package lists? run apt-get update as root)" >&2
	exit 1
fi
mkdir -p "$cache"
dpkg -x "$tmp"/prometheus_*.deb "$cache"
"$bin" --version >&2
echo "$bin"
