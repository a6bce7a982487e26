#!/usr/bin/env bash
# Makes sure PgBouncer is on this machine: `make test` runs the database,
# notification and consumer tests and mio serve's chaos test through a
# private PgBouncer in transaction pooling mode (make test-pgbouncer; the
# tests start their own on a free port). Installs Debian's pgbouncer when
# missing and this runs as root with apt-get; otherwise says exactly what
# to install and exits 1 under CI=true (the suite would be skipped).
set -euo pipefail

if command -v pgbouncer >/dev/null 2>&1 || [ -x /usr/sbin/pgbouncer ]; then exit 0; fi

. "$(dirname "$0")/apt-install.sh"
# The package may start its own service (port 6432); the tests do not use it.
apt_install pgbouncer pgbouncer && exit 0
echo "the PgBouncer suite needs pgbouncer (Debian: apt-get install pgbouncer); it is skipped without it" >&2
if [ "${CI:-}" = "true" ]; then exit 1; fi
