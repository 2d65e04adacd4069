#!/usr/bin/env bash
# Regenerates the report screenshots in docs/img: the reports of
# examples/quickstart.yaml, of examples/scheduling.yaml (its first two
# emulated hours) and of a heartbeat mode × dimensions sweep of
# examples/churn.yaml (100 peers, 20 minutes), all on the deterministic
# driver, rendered by headless Chromium (emulator/report/install-chromium.sh
# fetches one). About 20 s of both cores: run it as
#
#   flock /tmp/gridbed-cpu.lock emulator/report/screenshots.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
chromium="$(emulator/report/install-chromium.sh)"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/gridbed" ./cmd/gridbed

# shot PAGE OUT WIDTH,HEIGHT: a screenshot of the top of PAGE.
shot() {
	"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir="$tmp/profile" \
		--screenshot="$2" --window-size="$3" "file://$1" 2>/dev/null
	echo "$2" >&2
}

mkdir -p docs/img
"$tmp/gridbed" run examples/quickstart.yaml --driver sim --metrics-addr off --out "$tmp/quickstart" >/dev/null
shot "$tmp/quickstart/report.html" docs/img/report-quickstart.png 1400,1800

"$tmp/gridbed" run examples/scheduling.yaml --driver sim --metrics-addr off --out "$tmp/scheduling" --set duration=2h >/dev/null
shot "$tmp/scheduling/report.html" docs/img/report-scheduling.png 1400,3100

"$tmp/gridbed" sweep examples/churn.yaml --driver sim --out "$tmp/sweep" --set peers.count=100 --set duration=20m --set churn.stop=15m \
	--vary overlay.heartbeat.mode=vanilla,compact,adaptive --vary overlay.dimensions=2,3,4 >/dev/null 2>&1
shot "$tmp/sweep/report.html" docs/img/report-sweep-churn.png 1400,2000
