#!/usr/bin/env bash
# Benchmark: what redundancy costs, on one cluster of four targets (each
# its own mountpath; on this machine they all share one disk and two
# cores). PUT of 4 MiB objects into a plain bucket, one with mirror
# copies 2 and one erasure coded 2+1, runs alternated, with wrk PUTting
# one object over and over as the witness; then GET of erasure-coded
# objects whose whole copy on the owner is gone (each read rebuilds the
# object from two slices and keeps it) against GET of the same objects
# whole, with curl timing one object each way as the witness.
source "$(dirname "$0")/lib.sh"
REPS=${BENCH_REPS:-3}
WORKERS=${BENCH_WORKERS:-8}
start_cluster 4
curl -sf -X PUT "$PROXY/v1/buckets/plain" >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/mirror" -d '{"mirror": {"copies": 2}}' >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/ec" -d '{"ec": {"data": 2, "parity": 1}}' >/dev/null
median() { python3 -c 'import sys; v=sorted(map(float,sys.argv[1:])); print(v[len(v)//2])' "$@"; }
SIZE=4194304 COUNT=64
printf '\n== PUT with redundancy: four targets on one disk, %d x 4 MiB per run, %d workers, median of %d ==\n' \
  "$COUNT" "$WORKERS" "$REPS"
printf '%-40s %10s %8s %9s\n' what MiB/s p99_ms vs_plain
declare -A mibs p99s
for b in plain mirror ec; do mibs[$b]="" p99s[$b]=""; done
for rep in $(seq "$REPS"); do
  for b in plain mirror ec; do
    j=$(loader_json --endpoint "$PROXY" --bucket $b --pct-put 100 --epochs 1 --num-objects "$COUNT" \
        --prefix "r$rep/" --min-size $SIZE --max-size $SIZE --workers "$WORKERS")
    [ "$(errors "$j")" = 0 ] || { echo "redundancy.sh: errors in PUTs to $b: $j" >&2; exit 1; }
    mibs[$b]+=" $(field "$j" PUT mib_per_s)"
    p99s[$b]+=" $(field "$j" PUT p99)"
  done
done
plain=$(median ${mibs[plain]})
for b in plain mirror ec; do
  m=$(median ${mibs[$b]})
  printf '%-40s %10.1f %8.1f %8sx\n' "shoal-loader PUT 4 MiB, $b" "$m" \
    "$(python3 -c "print($(median ${p99s[$b]})/1000)")" "$(ratio "$m" "$plain")"
done
# witness: wrk PUTs one object again and again (its body from a script)
printf 'wrk.method = "PUT"\nwrk.body = string.rep("w", %d)\n' $SIZE > "$BENCH_DIR/put.lua"
wrk_put() { # BUCKET -> MiB/s of good answers
  local b=$1 out
  out=$(wrk -t1 -c1 -d3s -s "$BENCH_DIR/put.lua" "$PROXY/s3/$b/witness")
  if grep -q 'Non-2xx' <<<"$out"; then echo "redundancy.sh: wrk saw errors on $b" >&2; exit 1; fi
  awk -v b=$SIZE '/^Requests\/sec/ {printf "%.1f", $2 * b / 1048576}' <<<"$out"
}
wp=$(wrk_put plain)
for b in plain mirror ec; do
  w=$(wrk_put $b)
  printf '%-40s %10.1f %8s %8sx\n' "witness: wrk, one 4 MiB object, $b (S3)" "$w" "" "$(ratio "$w" "$wp")"
done

# GET: rebuilt from slices against whole; the objects are 3 MiB + 1 so
# that their whole copies are told apart from everything else by size
RSIZE=3145729 RCOUNT=48
"$LOADER" --endpoint "$PROXY" --bucket ec --pct-put 100 --epochs 1 --num-objects $RCOUNT \
  --prefix rb/o --min-size $RSIZE --max-size $RSIZE --workers "$WORKERS" --stats-interval 0 >/dev/null
lose_whole() { # delete every owner's whole copy of the rb/ objects
  find "$BENCH_DIR/cluster" -path '*/data/*' -type f -size ${RSIZE}c -delete
}
printf '\n== GET of erasure-coded 3 MiB objects: rebuilt from 2 of 3 slices vs whole, %d objects once each, 4 workers ==\n' \
  $RCOUNT
printf '%-40s %10s %8s %9s\n' what MiB/s p99_ms vs_whole
lose_whole
rb=$(loader_json --endpoint "$PROXY" --mode direct --bucket ec --epochs 1 --num-objects $RCOUNT \
     --prefix rb/o --workers 4 --verify)
[ "$(errors "$rb")" = 0 ] || { echo "redundancy.sh: errors reading rebuilt objects: $rb" >&2; exit 1; }
whole=$(loader_json --endpoint "$PROXY" --mode direct --bucket ec --epochs 1 --num-objects $RCOUNT \
        --prefix rb/o --workers 4 --verify)
w=$(field "$whole" GET mib_per_s) r=$(field "$rb" GET mib_per_s)
printf '%-40s %10.1f %8.1f %8sx\n' "shoal-loader GET, whole" "$w" \
  "$(python3 -c "print($(field "$whole" GET p99)/1000)")" "1.00"
printf '%-40s %10.1f %8.1f %8sx\n' "shoal-loader GET, rebuilt from slices" "$r" \
  "$(python3 -c "print($(field "$rb" GET p99)/1000)")" "$(ratio "$r" "$w")"
one=$(printf 'rb/o%08d' 0)
lose_whole
tr=$(curl -sf -L -o /dev/null -w '%{time_total}' "$PROXY/v1/objects/ec/$one")
tw=$(curl -sf -L -o /dev/null -w '%{time_total}' "$PROXY/v1/objects/ec/$one")
printf '%-40s %10.1f %8s %8sx\n' "witness: curl, one object, whole" \
  "$(python3 -c "print($RSIZE/1048576/$tw)")" "" "1.00"
printf '%-40s %10.1f %8s %8sx\n' "witness: curl, one object, rebuilt" \
  "$(python3 -c "print($RSIZE/1048576/$tr)")" "" "$(python3 -c "print('%.2f' % ($tw/$tr))")"
