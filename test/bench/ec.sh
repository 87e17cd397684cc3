#!/usr/bin/env bash
# Benchmark: erasure coding speed of ec/ (encode, and the worst decode: p
# data slices lost) in GB/s of object bytes on one core, against ISA-L's
# own loop on the same 1 MiB slices in the same run (goal >= 0.9x).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
BIN="$here/${BENCH_BUILD:-build}/bench/ec_bench"
[ -x "$BIN" ] || { echo "ec.sh: no $BIN: run make first" >&2; exit 1; }
printf '\n== erasure coding on one core: ec/ against ISA-L, 1 MiB slices ==\n'
"$BIN" 1048576 2 2+1 4+2 8+4 16+8
