#!/usr/bin/env bash
# Benchmark 1: warm GET throughput of Shoal (native API through the proxy's
# redirects and straight to the owning target; S3 API forwarded by the
# proxy and redirected by it) against nginx serving the same bytes as
# static files, and against haproxy in front of that nginx (the two-hop
# peer of the S3 forwarded row), with the same load generator; and the
# load generator against wrk on nginx, to show it is not the bottleneck.
source "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECS:-2}
REPS=${BENCH_REPS:-3}      # each figure: the median of REPS runs, interleaved
WORKERS=${BENCH_WORKERS:-32}

start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/bench" >/dev/null
NGX_PORT=$((BASE_PORT + 10))
mkdir -p "$BENCH_DIR/www"
start_nginx "$BENCH_DIR/www" $NGX_PORT
NGX="http://127.0.0.1:$NGX_PORT"
HAP_PORT=$((BASE_PORT + 11))
start_haproxy $HAP_PORT $NGX_PORT
HAP="http://127.0.0.1:$HAP_PORT"

# restart_proxy EXTRA_ARGS: the proxy again, with other options
restart_proxy() {
  "$ROOT/deploy/local/cluster.sh" stop-node p0 >/dev/null
  SHOAL_EXTRA_ARGS="--log_level warn $1" "$ROOT/deploy/local/cluster.sh" start-node p0 >/dev/null
  for _ in $(seq 100); do
    curl -sf "$PROXY/v1/health" >/dev/null && return 0
    sleep 0.1
  done
  echo "the proxy did not come back" >&2
  return 1
}

# BENCH_SPECS: label:bytes:count, a subset to measure one size quickly
SPECS=${BENCH_SPECS:-"4KiB:4096:2000 64KiB:65536:1000 1MiB:1048576:200 16MiB:16777216:24"}
measured() { [[ " $SPECS " == *" $1:"* ]]; }   # LABEL: is that size in SPECS?
declare -A RES
for spec in $SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  prefix="w$label/o"
  make_files "$BENCH_DIR/www/bench" "$count" "$bytes" "$prefix"
  "$LOADER" --endpoint "$PROXY" --bucket bench --mode direct --pct-put 100 --epochs 1 \
    --num-objects "$count" --prefix "$prefix" --min-size "$bytes" --max-size "$bytes" \
    --workers 8 --stats-interval 0 >/dev/null
  common=(--num-objects "$count" --prefix "$prefix" --workers "$WORKERS" --duration "${SECS}s")
  for rep in $(seq "$REPS"); do
    RES[$label:N:$rep]=$(loader_json --endpoint "$NGX" --bucket bench --mode http "${common[@]}")
    RES[$label:H:$rep]=$(loader_json --endpoint "$HAP" --bucket bench --mode http "${common[@]}")
    RES[$label:R:$rep]=$(loader_json --endpoint "$PROXY" --bucket bench --mode shoal "${common[@]}")
    RES[$label:D:$rep]=$(loader_json --endpoint "$PROXY" --bucket bench --mode direct "${common[@]}")
  done
  RES[$label:SF:1]=$(loader_json --endpoint "$PROXY/s3" --bucket bench --mode s3 "${common[@]}")
done
# S3 with the proxy in redirect mode (s3_redirect): the same objects
restart_proxy "--s3_redirect true"
for spec in $SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  RES[$label:SR:1]=$(loader_json --endpoint "$PROXY/s3" --bucket bench --mode s3 \
    --num-objects "$count" --prefix "w$label/o" --workers "$WORKERS" --duration "${SECS}s")
done
restart_proxy ""

# Authentication on: a second one-target cluster with auth_keys, holding
# the same 4 KiB and 1 MiB objects, read with every request SigV4-signed by
# the loader; its runs alternate with unsigned runs of the first cluster so
# that both meet the same machine.
KEYS="benchkey:bench-secret-123"
signed=(--access-key "${KEYS%%:*}" --secret-key "${KEYS#*:}")
KPROXY=$(SHOAL_DATA="$BENCH_DIR/cluster-keys" SHOAL_PORT=$((BASE_PORT + 20)) SHOAL_TARGETS=1 \
  SHOAL_AUTH_KEYS="$KEYS" "$ROOT/deploy/local/cluster.sh" start)
curl -sf --aws-sigv4 aws:amz:us-east-1:s3 --user "$KEYS" -X PUT "$KPROXY/v1/buckets/bench" >/dev/null
# by default the 4 KiB and 1 MiB sizes of SPECS (the unsigned runs read
# the first cluster's objects, which only SPECS PUTs)
SIGNED_SPECS=${BENCH_SIGNED_SPECS-$(for s in $SPECS; do
  case $s in 4KiB:*|1MiB:*) printf '%s ' "$s" ;; esac
done)}
for spec in $SIGNED_SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  "$LOADER" --endpoint "$KPROXY" --bucket bench --mode direct --pct-put 100 --epochs 1 \
    --num-objects "$count" --prefix "w$label/o" --min-size "$bytes" --max-size "$bytes" \
    --workers 8 --stats-interval 0 "${signed[@]}" >/dev/null
  common=(--num-objects "$count" --prefix "w$label/o" --workers "$WORKERS" --duration "${SECS}s")
  for rep in $(seq "$REPS"); do
    RES[$label:RU:$rep]=$(loader_json --endpoint "$PROXY" --bucket bench --mode shoal "${common[@]}")
    RES[$label:RS:$rep]=$(loader_json --endpoint "$KPROXY" --bucket bench --mode shoal "${signed[@]}" "${common[@]}")
    RES[$label:DU:$rep]=$(loader_json --endpoint "$PROXY" --bucket bench --mode direct "${common[@]}")
    RES[$label:DS:$rep]=$(loader_json --endpoint "$KPROXY" --bucket bench --mode direct "${signed[@]}" "${common[@]}")
    RES[$label:SFU:$rep]=$(loader_json --endpoint "$PROXY/s3" --bucket bench --mode s3 "${common[@]}")
    RES[$label:SFS:$rep]=$(loader_json --endpoint "$KPROXY/s3" --bucket bench --mode s3 "${signed[@]}" "${common[@]}")
  done
done
SHOAL_DATA="$BENCH_DIR/cluster-keys" "$ROOT/deploy/local/cluster.sh" stop >/dev/null

printf '\n== warm GET: Shoal vs nginx static, same loader, %s workers, %ss runs, nginx and native: median of %s interleaved ==\n' "$WORKERS" "$SECS" "$REPS"
printf '%-7s %-24s %10s %10s %8s %8s  %s\n' size system MiB/s ops/s p99_ms vs_nginx goal
declare -A names=([N]="nginx static" [H]="haproxy -> nginx" [R]="shoal native, redirect" [D]="shoal native, direct" [SF]="shoal S3, forwarded" [SR]="shoal S3, redirect"
                  [RS]="native, redirect" [DS]="native, direct" [SFS]="S3, forwarded")
# reps KIND: how many runs a row has (the goal rows REPS, the S3 rows one)
reps() { case $1 in SF|SR) echo 1 ;; *) echo "$REPS" ;; esac; }
# median LABEL KIND FIELD: the median over the runs
median() {
  local v=()
  for rep in $(seq "$(reps "$2")"); do v+=("$(field "${RES[$1:$2:$rep]}" GET "$3")"); done
  python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.argv[1:])))' "${v[@]}"
}
for spec in $SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  nmb=$(median "$label" N mib_per_s)
  hmb=$(median "$label" H mib_per_s)
  for kind in N H R D SF SR; do
    mb=$(median "$label" "$kind" mib_per_s); ops=$(median "$label" "$kind" ops_per_s)
    p99=$(median "$label" "$kind" p99)
    r=$(ratio "$mb" "$nmb")
    goal=""
    case "$label:$kind" in
      1MiB:R|1MiB:D|16MiB:R|16MiB:D) goal="0.9x $(verdict "$r" 0.9)" ;;
      4KiB:R) goal="0.5x $(verdict "$r" 0.5)" ;;
      4KiB:D) goal="0.8x $(verdict "$r" 0.8)" ;;
    esac
    if [ "$kind" = SF ]; then     # the two-hop row against the two-hop peer
      rh=$(ratio "$mb" "$hmb")
      goal="${rh}x of haproxy, 1.1x $(verdict "$rh" 1.1)"
    fi
    errs=0
    for rep in $(seq "$(reps "$kind")"); do errs=$((errs + $(errors "${RES[$label:$kind:$rep]}"))); done
    [ "$errs" = 0 ] || goal="$goal errors=$errs"
    printf '%-7s %-24s %10.1f %10.0f %8.2f %8s  %s\n' "$label" "${names[$kind]}" "$mb" "$ops" \
      "$(python3 -c "print($p99/1000)")" "${r}x" "$goal"
  done
done

printf '\n== authentication on (auth_keys, every request SigV4-signed) vs off, same objects, median of %s alternating runs ==\n' "$REPS"
printf '%-7s %-24s %10s %10s %10s\n' size system signed unsigned signed/unsigned
for spec in $SIGNED_SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  for pair in RS:RU DS:DU SFS:SFU; do
    s=${pair%%:*} u=${pair#*:}
    smb=$(median "$label" "$s" mib_per_s); umb=$(median "$label" "$u" mib_per_s)
    errs=0
    for rep in $(seq "$(reps "$s")"); do errs=$((errs + $(errors "${RES[$label:$s:$rep]}"))); done
    printf '%-7s %-24s %10.1f %10.1f %9sx %s\n' "$label" "${names[$s]}" "$smb" "$umb" \
      "$(ratio "$smb" "$umb")" "$([ "$errs" = 0 ] || echo "errors=$errs")"
  done
done

printf '\n== the loader vs wrk: GETs of one file from nginx, %s connections, requests/s, median of %s runs of %ss ==\n' "$WORKERS" "$REPS" "$SECS"
printf '%-7s %12s %12s %9s  goal\n' size wrk shoal-loader ratio
for label in 4KiB 1MiB; do
  measured "$label" || continue
  one="$NGX/bench/w$label/o00000000"
  ws=() ls=()
  for rep in $(seq "$REPS"); do
    ws+=("$(wrk -t2 -c"$WORKERS" -d"${SECS}s" "$one" | awk '/^Requests\/sec/ {print $2}')")
    l=$(loader_json --endpoint "$NGX" --bucket bench --mode http --num-objects 1 --prefix "w$label/o" \
        --workers "$WORKERS" --duration "${SECS}s")
    ls+=("$(field "$l" GET ops_per_s)")
  done
  w=$(python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.argv[1:])))' "${ws[@]}")
  l=$(python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.argv[1:])))' "${ls[@]}")
  r=$(ratio "$l" "$w")
  printf '%-7s %12.0f %12.0f %8sx  0.9x %s\n' "$label" "$w" "$l" "$r" "$(verdict "$r" 0.9)"
done

# wrk as a second witness of the small rows: the same objects, read by wrk
# rotating over WRK_NAMES names (test/bench/rotate.lua), from nginx, through
# the proxy's S3 API (forwarded) and straight from the target (native).
WRK_NAMES=500
T0="http://127.0.0.1:$((BASE_PORT + 1))"
printf '\n== wrk witnesses: GETs rotating over %s names, %s connections, requests/s, median of %s runs of %ss ==\n' "$WRK_NAMES" "$WORKERS" "$REPS" "$SECS"
printf '%-7s %-24s %12s %9s  %s\n' size system wrk_req/s vs_nginx non-2xx
for label in 4KiB 64KiB; do
  measured "$label" || continue
  nginx_rps=""
  for kind in nginx haproxy s3 direct; do
    case $kind in
      nginx) url=$NGX path="/bench/w$label/o" name="nginx static" ;;
      haproxy) url=$HAP path="/bench/w$label/o" name="haproxy -> nginx" ;;
      s3) url=$PROXY path="/s3/bench/w$label/o" name="shoal S3, forwarded" ;;
      direct) url=$T0 path="/v1/objects/bench/w$label/o" name="shoal native, direct" ;;
    esac
    runs=() bad=0
    for rep in $(seq "$REPS"); do
      out=$(WRK_PATH=$path WRK_N=$WRK_NAMES wrk -t2 -c"$WORKERS" -d"${SECS}s" \
            -s "$(dirname "$0")/rotate.lua" "$url")
      runs+=("$(awk '/^Requests\/sec/ {print $2}' <<<"$out")")
      bad=$((bad + $(awk '/Non-2xx/ {print $NF}' <<<"$out" | tr -d ' ' || true) + 0))
    done
    rps=$(python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.argv[1:])))' "${runs[@]}")
    [ -n "$nginx_rps" ] || nginx_rps=$rps
    printf '%-7s %-24s %12.0f %8sx  %s\n' "$label" "$name" "$rps" "$(ratio "$rps" "$nginx_rps")" "$bad"
  done
done
