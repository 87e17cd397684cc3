#!/usr/bin/env bash
# Benchmark 2: a first epoch through Shoal (cold GETs, fetched from the
# backend and kept), a second epoch (warm), and the same objects read
# straight from the backend, against two backends: nginx on loopback
# serving the files under /bucket/key (answers path-style S3 GETs), so
# Shoal's own cost on a miss shows; and the same nginx in a network
# namespace behind a veth shaped with tc netem like a remote cloud.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-16}
COUNT=${BENCH_COLD_COUNT:-64}
SIZE=${BENCH_COLD_SIZE:-4194304}
FAR_DELAY=${BENCH_FAR_DELAY_MS:-10}
FAR_RATE=${BENCH_FAR_RATE:-400mbit}

start_cluster 1
mkdir -p "$BENCH_DIR/www"
make_files "$BENCH_DIR/www/src" "$COUNT" "$SIZE" "o"
NGX_PORT=$((BASE_PORT + 10))

printf '\n== cold vs warm vs direct: %d objects of %d MiB, %d workers, one epoch each ==\n' \
  "$COUNT" $((SIZE >> 20)) "$WORKERS"
printf '%-34s %-16s %10s %8s %8s  %s\n' backend read MiB/s p99_ms vs_direct goal
run_backend() { # label addr ns
  local label=$1 addr=$2 ns=$3 bucket="mirror$4"
  start_nginx "$BENCH_DIR/www" "$NGX_PORT" "" "$addr" "$ns"
  local ep="http://$addr:$NGX_PORT"
  curl -sf -X PUT "$PROXY/v1/buckets/$bucket" \
    -d "{\"backend\": \"s3://src\", \"endpoint\": \"$ep\", \"addressing\": \"path\"}" >/dev/null
  local common=(--num-objects "$COUNT" --prefix o --workers "$WORKERS" --epochs 1)
  local d c w
  d=$(loader_json --endpoint "$ep" --bucket src --mode http "${common[@]}")
  c=$(loader_json --endpoint "$PROXY" --bucket "$bucket" "${common[@]}")
  w=$(loader_json --endpoint "$PROXY" --bucket "$bucket" "${common[@]}")
  local dmb cmb wmb
  dmb=$(field "$d" GET mib_per_s); cmb=$(field "$c" GET mib_per_s); wmb=$(field "$w" GET mib_per_s)
  printf '%-34s %-16s %10.1f %8.1f %8s\n' "$label" "direct (backend)" "$dmb" \
    "$(python3 -c "print($(field "$d" GET p99)/1000)")" "1.00x"
  local rc rw
  rc=$(ratio "$cmb" "$dmb"); rw=$(ratio "$wmb" "$dmb")
  printf '%-34s %-16s %10.1f %8.1f %8s  0.9x %s%s\n' "" "shoal cold" "$cmb" \
    "$(python3 -c "print($(field "$c" GET p99)/1000)")" "${rc}x" "$(verdict "$rc" 0.9)" \
    "$([ "$(errors "$c")" = 0 ] || echo " errors=$(errors "$c")")"
  printf '%-34s %-16s %10.1f %8.1f %8s  %s\n' "" "shoal warm" "$wmb" \
    "$(python3 -c "print($(field "$w" GET p99)/1000)")" "${rw}x" \
    "$([ "$5" = far ] && echo "5x $(verdict "$rw" 5)")"
  stop_nginx
}
run_backend "fast: nginx on loopback" 127.0.0.1 "" 1 fast
make_far_host "$FAR_DELAY" "$FAR_RATE"
run_backend "far: netns, $FAR_DESC" "$FAR_ADDR" "$NETNS" 2 far
