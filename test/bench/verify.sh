#!/usr/bin/env bash
# Benchmark: warm GET with checksums verified (the default: each GET
# checks the blocks it sends that were not checked since their pages were
# loaded) against verify_reads: false (the zero-copy send alone), on the
# same one-target cluster, the same objects in two buckets, runs
# alternated; wrk witnesses one object of each through the proxy's S3
# relay. The goal: verified >= 0.9x of off at 4 KiB, 1 MiB and 16 MiB.
source "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECS:-3}
REPS=${BENCH_REPS:-3}
WORKERS=${BENCH_WORKERS:-16}
start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/plain" -d '{"verify_reads": false}' >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/vr" >/dev/null
median() { python3 -c 'import sys; v=sorted(map(float,sys.argv[1:])); print(v[len(v)//2])' "$@"; }
wrk_mibs() { # URL BYTES; only good answers count
  local out
  out=$(wrk -t1 -c4 -d"${SECS}s" "$1")
  if grep -q 'Non-2xx' <<<"$out"; then echo "verify.sh: wrk saw errors on $1" >&2; exit 1; fi
  awk -v b="$2" '/^Requests\/sec/ {printf "%.1f", $2 * b / 1048576}' <<<"$out"
}
printf '\n== warm GET, checksums verified (default) vs verify_reads false: one target, %d workers, median of %d x %d s ==\n' \
  "$WORKERS" "$REPS" "$SECS"
printf '%-34s %10s %10s %8s\n' what off_MiB/s on_MiB/s on/off
for spec in 4KiB:4096:2000 1MiB:1048576:200 16MiB:16777216:24; do
  IFS=: read -r label bytes count <<<"$spec"
  for b in plain vr; do
    "$LOADER" --endpoint "$PROXY" --bucket $b --mode direct --pct-put 100 --epochs 1 \
      --num-objects "$count" --prefix "$label/o" --min-size "$bytes" --max-size "$bytes" \
      --workers 8 --stats-interval 0 >/dev/null
  done
  off=() on=()
  for _ in $(seq "$REPS"); do
    for b in plain vr; do
      j=$(loader_json --endpoint "$PROXY" --bucket $b --mode direct --num-objects "$count" \
          --prefix "$label/o" --workers "$WORKERS" --duration "${SECS}s" --verify)
      [ "$(errors "$j")" = 0 ] || { echo "verify.sh: errors reading $b: $j" >&2; exit 1; }
      if [ $b = plain ]; then off+=("$(field "$j" GET mib_per_s)"); else on+=("$(field "$j" GET mib_per_s)"); fi
    done
  done
  o=$(median "${off[@]}") n=$(median "${on[@]}")
  printf '%-34s %10.1f %10.1f %7sx\n' "shoal-loader GET $label" "$o" "$n" "$(ratio "$n" "$o")"
  one=$(printf '%s/o%08d' "$label" 0)
  wo=$(wrk_mibs "$PROXY/s3/plain/$one" "$bytes") wn=$(wrk_mibs "$PROXY/s3/vr/$one" "$bytes")
  printf '%-34s %10.1f %10.1f %7sx\n' "witness: wrk, one $label object (S3)" "$wo" "$wn" \
    "$(ratio "$wn" "$wo")"
done
