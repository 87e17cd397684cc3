#!/usr/bin/env bash
# Installs every build, test and benchmark dependency of Shoal from Debian's
# packages. Idempotent: packages already present are not touched, and the
# script exits at once when nothing is missing.
set -euo pipefail

pkgs=(
  build-essential pkg-config
  libevent-dev node-llhttp libcurl4-openssl-dev libssl-dev
  libisal-dev librocksdb-dev libxxhash-dev libjansson-dev libexpat1-dev
  libraft-dev libuv1-dev libfuse3-dev fuse3 libarchive-dev
  curl procps psmisc clang libclang-rt-14-dev lz4
  nginx-light haproxy wrk fio iproute2 openssl systemd prometheus python3-yaml
  python3 python3-requests python3-pytest python3-boto3 python3-pil nodejs
  awscli s3cmd rclone
)

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
    || missing+=("$p")
done

here=$(cd "$(dirname "$0")/.." && pwd)

# The tests' third-party S3 server (s3rver), Azure Storage emulator
# (azurite), the AWS SDK for JavaScript v3 and Azure's storage-blob client,
# pinned by test/package-lock.json, installed into test/node_modules.
npm_deps() {
  [ -x "$here/test/node_modules/.bin/s3rver" ] \
    && [ -x "$here/test/node_modules/.bin/azurite-blob" ] \
    && [ -f "$here/test/node_modules/@azure/storage-blob/package.json" ] \
    && [ -f "$here/test/node_modules/@aws-sdk/client-s3/package.json" ] \
    && [ -f "$here/test/node_modules/@aws-sdk/lib-storage/package.json" ] && return 0
  command -v npm >/dev/null || missing+=(npm)
  return 1
}

need_npm=0
npm_deps || need_npm=1
if [ ${#missing[@]} -eq 0 ] && [ $need_npm = 0 ]; then
  exit 0
fi
if [ ${#missing[@]} -eq 0 ]; then
  (cd "$here/test" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
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

if [ $need_npm = 1 ]; then
  (cd "$here/test" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
