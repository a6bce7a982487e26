#!/usr/bin/env bash
# Makes sure Chromium is on this machine: the web console's browser test
# (cmd/mio TestConsoleInBrowser, chromedp) drives it headless under `make
# test`. Installs Debian's chromium when missing and this runs as root
# with apt-get; otherwise says exactly what to install (the test then
# skips, or fails under CI=true).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then exit 0; fi

. "$(dirname "$0")/apt-install.sh"
apt_install chromium chromium && exit 0
echo "the console browser test needs chromium (Debian: apt-get install chromium); it is skipped without it (fails under CI=true)" >&2
