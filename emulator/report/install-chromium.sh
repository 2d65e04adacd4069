#!/usr/bin/env bash
# Prints the path of a Chromium for the reports' browser test
# (emulator/report/chromium_test.go) and for emulator/report/screenshots.sh,
# fetching one if needed: Debian's chromium package, the libraries it needs
# that the system lacks, and fonts-liberation (the figures' typeface),
# downloaded with `apt-get download` and unpacked with `dpkg -x` into the
# user's cache directory, so no root is needed. What it prints there is a
# launcher that sets the library and font paths. Used by .ci/run; by hand:
#
#   export GRIDBED_CHROMIUM="$(emulator/report/install-chromium.sh)"
#
# Exits non-zero (and prints nothing on stdout) when there is no Chromium
# and apt cannot fetch one.
set -euo pipefail

if [ -n "${GRIDBED_CHROMIUM:-}" ] && [ -x "$GRIDBED_CHROMIUM" ]; then
	echo "$GRIDBED_CHROMIUM"
	exit 0
fi
for c in chromium chromium-browser; do
	if command -v "$c" >/dev/null 2>&1; then
		command -v "$c"
		exit 0
	fi
done

# The same directory the test looks in (Go's os.UserCacheDir on Linux).
cache="${XDG_CACHE_HOME:-$HOME/.cache}/gridbed/chromium"
launcher="$cache/chromium"
if [ -x "$launcher" ] && "$launcher" --version >/dev/null 2>&1; then
	echo "$launcher"
	exit 0
fi

if ! command -v apt-get >/dev/null 2>&1 || ! command -v dpkg >/dev/null 2>&1; then
	echo "install-chromium: no apt-get/dpkg here; install Chromium and put it on PATH or set GRIDBED_CHROMIUM" >&2
	exit 1
fi

# chromium and, recursively, every dependency dpkg does not list as
# installed (virtual packages are skipped: chromium runs without them).
declare -A seen
queue=(chromium chromium-common fonts-liberation)
pkgs=()
while [ ${#queue[@]} -gt 0 ]; do
	p="${queue[0]}"
	queue=("${queue[@]:1}")
	[ -n "${seen[$p]:-}" ] && continue
	seen[$p]=1
	if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		continue
	fi
	pkgs+=("$p")
	while read -r d; do
		queue+=("$d")
	done < <(apt-cache depends --no-recommends --no-suggests --no-conflicts --no-breaks --no-replaces --no-enhances "$p" 2>/dev/null |
		awk '/^ *\|?(Pre)?Depends:/ && $2 !~ /^</ {print $2}')
done

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# apt-get download needs the package lists (apt-get update, done by the
# image or by root); it writes the .deb files into the current directory.
if ! (cd "$tmp" && apt-get download "${pkgs[@]}" >&2); then
	echo "install-chromium: apt-get download ${pkgs[*]} failed (no package lists? run apt-get update as root)" >&2
	exit 1
fi
new="$cache.new"
rm -rf "$new"
mkdir -p "$new/root"
for deb in "$tmp"/*.deb; do
	dpkg -x "$deb" "$new/root"
done
root="$cache/root"
# Every directory of the unpacked tree that holds shared libraries.
libs="$(find "$new/root" -name '*.so*' \( -type f -o -type l \) -printf '%h\n' | sort -u | sed "s|^$new/root|$root|" | paste -sd: -)"
cat >"$new/fonts.conf" <<EOF
<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig>
  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>
  <dir>$root/usr/share/fonts</dir>
  <cachedir>$cache/fontconfig</cachedir>
</fontconfig>
EOF
cat >"$new/chromium" <<EOF
#!/bin/sh
# Debian's chromium unpacked by emulator/report/install-chromium.sh.
export LD_LIBRARY_PATH="$libs\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}"
export FONTCONFIG_FILE="$cache/fonts.conf"
exec "$root/usr/lib/chromium/chromium" "\$@"
EOF
chmod +x "$new/chromium"
rm -rf "$cache"
mv "$new" "$cache"
"$launcher" --version >&2
echo "$launcher"
