#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of Shoal from Debian's
# packages. Idempotent: packages already present are not touched, and the
# script exits at once when nothing is missing.
set -euo pipefail

pkgs=(
  build-essential pkg-config
  libevent-dev node-llhttp libcurl4-openssl-dev libssl-dev
  libisal-dev librocksdb-dev libxxhash-dev libjansson-dev libexpat1-dev
  curl procps psmisc
  python3 python3-requests python3-pytest
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}" >&2
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! { $SUDO apt-get update -qq && \
       $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  rm -f "$log"
  echo "install-deps: apt-get failed" >&2
  exit 1
fi
rm -f "$log"
