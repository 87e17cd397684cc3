#!/usr/bin/env bash
# make bench: every benchmark, one after another; each prints its table.
set -euo pipefail
here=$(dirname "$0")
for b in warm_get cold_warm peer_cache put small jobs writeback evict rebalance ec verify redundancy \
         tls batch backends transform scale; do
  bash "$here/$b.sh"
done
