#!/usr/bin/env bash
# Integration tests: real daemons on loopback, driven by pytest with curl and
# Python requests. SHOAL_BUILD picks the build (build or build-san).
#   test/run-integration.sh                      every test
#   test/run-integration.sh test_ec.py           one file
#   test/run-integration.sh test_ec.py::test_x   one test (any pytest arguments)
# The fifteen slowest tests are listed at the end.
set -euo pipefail
cd "$(dirname "$0")/integration"
[ $# -gt 0 ] || set -- .
exec /usr/bin/python3 -m pytest -q -p no:cacheprovider --durations=15 "$@"
