# Sourced by the ensure-*.sh scripts. apt_install WHAT PACKAGE... installs
# Debian packages when this runs as root with apt-get, saying so on stderr
# ("WHAT missing: installing ..."); it returns 1 without trying otherwise.
apt_install() {
  local what=$1; shift
  if [ "$(id -u)" != "0" ] || ! command -v apt-get >/dev/null 2>&1; then return 1; fi
  echo "$what missing: installing Debian's $*" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
