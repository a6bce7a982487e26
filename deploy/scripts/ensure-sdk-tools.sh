#!/usr/bin/env bash
# Makes sure python3 and Node.js with npm are on this
# machine: the SDK suites (sdk/python, sdk/typescript) run under `make
# test` against a real MIO. Installs Debian's packages when missing and
# this runs as root with apt-get; otherwise says exactly what to install
# (the Go tests then skip the SDK suites with that message).
set -euo pipefail

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
[ ${#missing[@]} -eq 0 ] && exit 0

. "$(dirname "$0")/apt-install.sh"
apt_install "SDK test tools (${missing[*]})" "${missing[@]}" && exit 0
echo "SDK tests need: ${missing[*]} (Debian: apt-get install ${missing[*]}); they are skipped without them" >&2
