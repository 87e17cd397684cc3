#!/usr/bin/env bash
# Integration tests: real daemons on loopback, driven by pytest with curl and
# Python requests. SHOAL_BUILD picks the build (build or build-san).
set -euo pipefail
cd "$(dirname "$0")/integration"
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider "$@" .
