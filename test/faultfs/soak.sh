#!/usr/bin/env bash
# soak.sh: many power cuts of a loaded cluster on faultfs.
#
#   test/faultfs/soak.sh [CUTS] [ROUNDS]
#
# Runs test_powercut.py's cut test with CUTS cuts (default 200), ROUNDS
# times (default 1), each round on a new cluster, against SHOAL_BUILD
# (default build; build-san for the sanitizers); builds it first. Needs
# root and /dev/fuse, like the test. Stops at the first round that loses
# an acknowledged write, naming each object lost and what was read
# instead; SHOAL_KEEP=1 keeps every round's data directory (daemon logs,
# faultfs backing directories) under /tmp.
set -euo pipefail
cd "$(dirname "$0")/../.."
cuts=${1:-200}
rounds=${2:-1}
[[ "$cuts" =~ ^[1-9][0-9]*$ && "$rounds" =~ ^[1-9][0-9]*$ ]] ||
  { echo "usage: $0 [CUTS] [ROUNDS]" >&2; exit 2; }
build=${SHOAL_BUILD:-build}
sanitize=0
[ "$build" = build-san ] && sanitize=1
make -s SANITIZE=$sanitize all "$build/bin/faultfs"
cd test/integration
for ((r = 1; r <= rounds; r++)); do
  echo "soak: round $r of $rounds, $cuts cuts"
  SHOAL_BUILD=$build SHOAL_POWERCUTS=$cuts /usr/bin/python3 -m pytest -q -p no:cacheprovider -s \
    test_powercut.py::test_acknowledged_puts_survive_power_cuts
done
