#!/usr/bin/env bash
# Makes sure tmux is on this machine: the terminal test of mio top
# (cmd/mio TestTopInTmux) runs it in an 80×24 tmux session under `make
# test`. Installs Debian's tmux when missing and this runs as root with
# apt-get; otherwise says exactly what to install (the test then skips,
# or fails under CI=true).
set -euo pipefail

if command -v tmux >/dev/null 2>&1; then exit 0; fi

. "$(dirname "$0")/apt-install.sh"
apt_install tmux tmux && exit 0
echo "the terminal test of mio top needs tmux (Debian: apt-get install tmux); it is skipped without it (fails under CI=true)" >&2
