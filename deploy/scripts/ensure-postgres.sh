#!/usr/bin/env bash
# Makes sure PostgreSQL server binaries (initdb, postgres) are on this
# machine, which `mio dev` and the test suite need. Installs Debian's
# package when missing and this runs as root with apt-get; otherwise says
# exactly what to install. The package's own cluster is not created: MIO
# starts its own private clusters.
set -euo pipefail

have_pg() {
  command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1 && return 0
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1
}

if have_pg; then
  exit 0
fi
if [ -n "${MIO_TEST_DATABASE_URL:-}" ] && [ "${1:-}" = "--tests" ]; then
  exit 0 # tests use the given server
fi
if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
  echo "PostgreSQL server binaries not found: installing Debian's postgresql package" >&2
  mkdir -p /etc/postgresql-common
  grep -qs '^create_main_cluster' /etc/postgresql-common/createcluster.conf ||
    echo 'create_main_cluster = false' >>/etc/postgresql-common/createcluster.conf
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
  have_pg && exit 0
fi
cat >&2 <<'MSG'
PostgreSQL server binaries (initdb, postgres) are missing. Install them, e.g.:
  Debian/Ubuntu:  sudo apt-get install postgresql
  Fedora:         sudo dnf install postgresql-server
  macOS:          brew install postgresql@15
or point MIO at a server: MIO_DATABASE_URL=postgres://... (tests: MIO_TEST_DATABASE_URL).
MSG
exit 1
