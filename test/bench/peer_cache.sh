#!/usr/bin/env bash
# Benchmark 3: the peer. nginx configured as a caching reverse proxy
# (proxy_cache on local disk) in front of the same backend as Shoal, cold
# (first epoch) and warm (second), against Shoal, with the same loader.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-16}
COUNT=${BENCH_COLD_COUNT:-64}
SIZE=${BENCH_COLD_SIZE:-4194304}

start_cluster 1
mkdir -p "$BENCH_DIR/www" "$BENCH_DIR/cache"
make_files "$BENCH_DIR/www/src" "$COUNT" "$SIZE" "o"
ORIGIN_PORT=$((BASE_PORT + 10))
CACHE_PORT=$((BASE_PORT + 11))
# one nginx: the origin on one port, the caching proxy on another
start_nginx "$BENCH_DIR/www" "$ORIGIN_PORT" "
  proxy_cache_path $BENCH_DIR/cache levels=1:2 keys_zone=shoalbench:64m max_size=4g inactive=1h use_temp_path=off;
  server {
    listen 127.0.0.1:$CACHE_PORT;
    location / {
      proxy_pass http://127.0.0.1:$ORIGIN_PORT;
      proxy_http_version 1.1;
      proxy_set_header Connection \"\";
      proxy_cache shoalbench;
      proxy_cache_valid 200 1h;
      proxy_cache_lock on;
      proxy_buffering on;
    }
  }"
ORIGIN="http://127.0.0.1:$ORIGIN_PORT"
curl -sf -X PUT "$PROXY/v1/buckets/mirror" \
  -d "{\"backend\": \"s3://src\", \"endpoint\": \"$ORIGIN\", \"addressing\": \"path\"}" >/dev/null
common=(--num-objects "$COUNT" --prefix o --workers "$WORKERS" --epochs 1)
nc=$(loader_json --endpoint "http://127.0.0.1:$CACHE_PORT" --bucket src --mode http "${common[@]}")
nw=$(loader_json --endpoint "http://127.0.0.1:$CACHE_PORT" --bucket src --mode http "${common[@]}")
sc=$(loader_json --endpoint "$PROXY" --bucket mirror "${common[@]}")
sw=$(loader_json --endpoint "$PROXY" --bucket mirror "${common[@]}")
sd=$(loader_json --endpoint "$PROXY" --bucket mirror --mode direct "${common[@]}")
printf '\n== the peer: nginx proxy_cache vs Shoal, same backend, %d objects of %d MiB, %d workers ==\n' \
  "$COUNT" $((SIZE >> 20)) "$WORKERS"
printf '%-30s %10s %8s %10s  %s\n' what MiB/s p99_ms vs_nginx goal
row() { # label json ref goal
  local mb r
  mb=$(field "$2" GET mib_per_s)
  r=$(ratio "$mb" "$(field "$3" GET mib_per_s)")
  printf '%-30s %10.1f %8.1f %10s  %s%s\n' "$1" "$mb" \
    "$(python3 -c "print($(field "$2" GET p99)/1000)")" "${r}x" "$4" \
    "$([ "$(errors "$2")" = 0 ] || echo " errors=$(errors "$2")")"
}
row "nginx proxy_cache, cold" "$nc" "$nc" ""
row "nginx proxy_cache, warm" "$nw" "$nw" ""
row "shoal, cold" "$sc" "$nc" ""
row "shoal warm, redirect" "$sw" "$nw" "1x $(verdict "$(ratio "$(field "$sw" GET mib_per_s)" "$(field "$nw" GET mib_per_s)")" 1)"
row "shoal warm, direct-to-target" "$sd" "$nw" "1x $(verdict "$(ratio "$(field "$sd" GET mib_per_s)" "$(field "$nw" GET mib_per_s)")" 1)"
