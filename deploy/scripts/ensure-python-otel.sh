#!/usr/bin/env bash
# Makes the OpenTelemetry SDK for Python importable by the Python SDK's
# tracing tests (TestSDKPython), without touching the system's Python: when
# `import opentelemetry.sdk` fails, Debian's pure-Python packages
# (python3-opentelemetry-api, -sdk, -semantic-conventions and
# python3-typing-extensions, architecture "all") are downloaded from the
# Debian archive and unpacked into .cache/python-otel, which the test puts
# on PYTHONPATH. Debian's stable release has no OpenTelemetry packages, so
# they come from its development suite (MIO_PYTHON_OTEL_SUITE, default
# sid), whose index names the current files. Nothing to do when python3 is
# missing (the SDK suite is then skipped) or the SDK is already importable.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
dest=$root/.cache/python-otel
site=$dest/usr/lib/python3/dist-packages
command -v python3 >/dev/null 2>&1 || exit 0
python3 -c 'import opentelemetry.sdk.trace' >/dev/null 2>&1 && exit 0
PYTHONPATH=$site python3 -c 'import opentelemetry.sdk.trace' >/dev/null 2>&1 && exit 0

mirror=${MIO_DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=${MIO_PYTHON_OTEL_SUITE:-sid}
packages=(python3-opentelemetry-api python3-opentelemetry-sdk python3-opentelemetry-semantic-conventions python3-typing-extensions)
for tool in curl xz dpkg-deb; do
  if ! command -v $tool >/dev/null 2>&1; then
    echo "Python tracing tests need $tool to fetch the OpenTelemetry SDK for Python; they are skipped without it" >&2
    exit 0
  fi
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "OpenTelemetry SDK for Python missing: unpacking Debian's ${packages[*]} ($suite) into .cache/python-otel" >&2
if ! curl -fsSL "$mirror/dists/$suite/main/binary-all/Packages.xz" | xz -d > "$tmp/Packages"; then
  echo "could not read $mirror/dists/$suite/main/binary-all/Packages.xz; the Python tracing tests are skipped" >&2
  exit 0
fi
rm -rf "$dest"
mkdir -p "$dest"
for p in "${packages[@]}"; do
  file=$(awk -v p="$p" '$1 == "Package:" { hit = ($2 == p) } hit && $1 == "Filename:" { print $2; exit }' "$tmp/Packages")
  if [ -z "$file" ] || ! curl -fsSL -o "$tmp/p.deb" "$mirror/$file"; then
    echo "could not fetch $p from $mirror ($suite); the Python tracing tests are skipped" >&2
    rm -rf "$dest"
    exit 0
  fi
  dpkg-deb -x "$tmp/p.deb" "$dest"
done
PYTHONPATH=$site python3 -c 'import opentelemetry.sdk.trace'
