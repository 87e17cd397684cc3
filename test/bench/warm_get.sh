#!/usr/bin/env bash
# Benchmark 1: warm GET throughput of Shoal (redirects through the proxy,
# and straight to the owning target) against nginx serving the same bytes as
# static files, with the same load generator; and the load generator
# against wrk on nginx, to show it is not the bottleneck.
source "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECS:-5}
WORKERS=${BENCH_WORKERS:-32}

start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/bench" >/dev/null
NGX_PORT=$((BASE_PORT + 10))
mkdir -p "$BENCH_DIR/www"
start_nginx "$BENCH_DIR/www" $NGX_PORT
NGX="http://127.0.0.1:$NGX_PORT"

printf '\n== warm GET: Shoal vs nginx static, same loader, %s workers, %ss each ==\n' "$WORKERS" "$SECS"
printf '%-7s %-22s %10s %10s %8s %8s  %s\n' size system MiB/s ops/s p99_ms vs_nginx goal
for spec in 4KiB:4096:2000 64KiB:65536:1000 1MiB:1048576:200 16MiB:16777216:24; do
  IFS=: read -r label bytes count <<<"$spec"
  prefix="w$label/o"
  make_files "$BENCH_DIR/www/bench" "$count" "$bytes" "$prefix"
  "$LOADER" --endpoint "$PROXY" --bucket bench --mode direct --pct-put 100 --epochs 1 \
    --num-objects "$count" --prefix "$prefix" --min-size "$bytes" --max-size "$bytes" \
    --workers 8 --stats-interval 0 >/dev/null
  common=(--num-objects "$count" --prefix "$prefix" --workers "$WORKERS" --duration "${SECS}s")
  ng=$(loader_json --endpoint "$NGX" --bucket bench --mode http "${common[@]}")
  rd=$(loader_json --endpoint "$PROXY" --bucket bench --mode shoal "${common[@]}")
  di=$(loader_json --endpoint "$PROXY" --bucket bench --mode direct "${common[@]}")
  nmb=$(field "$ng" GET mib_per_s)
  names=("nginx static" "shoal redirect" "shoal direct-to-target")
  results=("$ng" "$rd" "$di")
  kinds=(N R D)
  for k in 0 1 2; do
    name=${names[$k]} js=${results[$k]} kind=${kinds[$k]}
    mb=$(field "$js" GET mib_per_s); ops=$(field "$js" GET ops_per_s); p99=$(field "$js" GET p99)
    r=$(ratio "$mb" "$nmb")
    goal=""
    case "$label:$kind" in
      1MiB:R|1MiB:D|16MiB:R|16MiB:D) goal="0.9x $(verdict "$r" 0.9)" ;;
      4KiB:R) goal="0.5x $(verdict "$r" 0.5)" ;;
      4KiB:D) goal="0.8x $(verdict "$r" 0.8)" ;;
    esac
    [ "$(errors "$js")" = 0 ] || goal="$goal errors=$(errors "$js")"
    printf '%-7s %-22s %10.1f %10.0f %8.2f %8s  %s\n' "$label" "$name" "$mb" "$ops" \
      "$(python3 -c "print($p99/1000)")" "${r}x" "$goal"
  done
done

printf '\n== the loader vs wrk: GET of one 1 MiB file from nginx, %s connections, %ss ==\n' "$WORKERS" "$SECS"
one="$NGX/bench/w1MiB/o00000000"
w=$(wrk -t2 -c"$WORKERS" -d"${SECS}s" "$one" | awk '/Transfer\/sec/ {v=$2; if (v ~ /GB/) {sub("GB","",v); v*=1024} else if (v ~ /MB/) sub("MB","",v); else if (v ~ /KB/) {sub("KB","",v); v/=1024}; print v}')
l=$(loader_json --endpoint "$NGX" --bucket bench --mode http --num-objects 1 --prefix w1MiB/o \
    --workers "$WORKERS" --duration "${SECS}s")
lmb=$(field "$l" GET mib_per_s)
r=$(ratio "$lmb" "$w")
printf '%-22s %10.1f MiB/s\n%-22s %10.1f MiB/s   %sx of wrk, goal 0.9x %s\n' wrk "$w" shoal-loader "$lmb" "$r" "$(verdict "$r" 0.9)"
