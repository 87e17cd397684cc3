#!/usr/bin/env bash
# Benchmark: cold GETs while eviction runs. One target whose only
# mountpath is a 256 MiB tmpfs, objects of 4 MiB behind nginx on loopback
# as a path-style S3 backend: a first epoch of cold GETs that fits with
# room to spare (52 objects, 81% of it), then one of 160 objects that keeps the drive
# above its high watermark, so the LRU job evicts all along.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_EVICT_WORKERS:-8}
SIZE=${BENCH_EVICT_SIZE:-4194304}
ROOM=${BENCH_EVICT_ROOM:-52}
MANY=${BENCH_EVICT_MANY:-160}
NGX_PORT=$((BASE_PORT + 10))

make_files "$BENCH_DIR/www/src" "$MANY" "$SIZE" "o"
MP="$BENCH_DIR/cluster/t0/mp0"
mkdir -p "$MP"
mount -t tmpfs -o size=256m tmpfs "$MP"
trap 'SHOAL_DATA="$BENCH_DIR/cluster" "$ROOT/deploy/local/cluster.sh" stop >/dev/null 2>&1 || true; umount "$MP" 2>/dev/null || true; bench_cleanup' EXIT
export SHOAL_EXTRA_ARGS="--log_level warn --space_sample_ms 200 --lru_dont_evict_s 0"
start_cluster 1
start_nginx "$BENCH_DIR/www" "$NGX_PORT"
EP="http://127.0.0.1:$NGX_PORT"
for b in room many; do
  curl -sf -X PUT "$PROXY/v1/buckets/$b" \
    -d "{\"backend\": \"s3://src\", \"endpoint\": \"$EP\", \"addressing\": \"path\"}" >/dev/null
done
printf '\n== cold GETs with eviction running: %d MiB objects, a 256 MiB drive, %d workers ==\n' \
  $((SIZE >> 20)) "$WORKERS"
printf '%-40s %10s %9s  %s\n' load MiB/s ratio goal
a=$(loader_json --endpoint "$PROXY" --bucket room --num-objects "$ROOM" --prefix o \
    --workers "$WORKERS" --epochs 1)
b=$(loader_json --endpoint "$PROXY" --bucket many --num-objects "$MANY" --prefix o \
    --workers "$WORKERS" --epochs 1)
amb=$(field "$a" GET mib_per_s); bmb=$(field "$b" GET mib_per_s)
evicted=$(curl -sf "$PROXY/v1/jobs?kind=lru" | python3 -c '
import json, sys, urllib.request
jobs = json.load(sys.stdin)["jobs"]
print(len(jobs))')
r=$(ratio "$bmb" "$amb")
printf '%-40s %10.1f %9s\n' "cold GETs, $ROOM objects (room to spare)" "$amb" "1.00x"
printf '%-40s %10.1f %8sx  0.9x %s (%s eviction rounds, %s errors)\n' \
  "cold GETs, $MANY objects (evicting)" "$bmb" "$r" "$(verdict "$r" 0.9)" "$evicted" \
  "$(errors "$b")"
