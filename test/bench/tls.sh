#!/usr/bin/env bash
# Benchmark: warm GET over HTTPS against plain HTTP, in the same run. Two
# one-target clusters hold the same 1 MiB and 16 MiB objects, one plain and
# one with every node on TLS (deploy/local/cluster.sh SHOAL_TLS=1); the
# loader reads them straight from the owning target (--mode direct), and
# nginx serves the same bytes as files over HTTP and HTTPS (the same
# certificate) as the reference. Runs interleave; each figure is the median
# of BENCH_REPS. wrk witnesses the 16 MiB rows over HTTPS.
source "$(dirname "$0")/lib.sh"
SECS=${BENCH_SECS:-2}
REPS=${BENCH_REPS:-3}
WORKERS=${BENCH_WORKERS:-16}

start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/bench" >/dev/null
TDATA="$BENCH_DIR/cluster-tls"
TPROXY=$(SHOAL_DATA="$TDATA" SHOAL_PORT=$((BASE_PORT + 20)) SHOAL_TARGETS=1 SHOAL_TLS=1 \
  SHOAL_EXTRA_ARGS="--log_level info" "$ROOT/deploy/local/cluster.sh" start)
CA="$TDATA/tls/ca.pem"
curl -sf --cacert "$CA" -X PUT "$TPROXY/v1/buckets/bench" >/dev/null
MODE=$(grep -ho "HTTPS on [^ ]* (.*" "$TDATA/logs/t0.log" | head -1 || true)

NGX_PORT=$((BASE_PORT + 10))
NGX_TLS_PORT=$((BASE_PORT + 11))
mkdir -p "$BENCH_DIR/www"
start_nginx "$BENCH_DIR/www" $NGX_PORT "server {
    listen 127.0.0.1:$NGX_TLS_PORT ssl;
    ssl_certificate $TDATA/tls/cert.pem;
    ssl_certificate_key $TDATA/tls/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    root $BENCH_DIR/www;
    location / { }
  }"
NGX="http://127.0.0.1:$NGX_PORT"
NGXS="https://127.0.0.1:$NGX_TLS_PORT"

SPECS="1MiB:1048576:200 16MiB:16777216:24"
declare -A RES
for spec in $SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  prefix="t$label/o"
  make_files "$BENCH_DIR/www/bench" "$count" "$bytes" "$prefix"
  fill=(--bucket bench --mode direct --pct-put 100 --epochs 1 --num-objects "$count"
        --prefix "$prefix" --min-size "$bytes" --max-size "$bytes" --workers 8 --stats-interval 0)
  "$LOADER" --endpoint "$PROXY" "${fill[@]}" >/dev/null
  "$LOADER" --endpoint "$TPROXY" --ca "$CA" "${fill[@]}" >/dev/null
  common=(--bucket bench --num-objects "$count" --prefix "$prefix" --workers "$WORKERS"
          --duration "${SECS}s")
  for rep in $(seq "$REPS"); do
    RES[$label:P:$rep]=$(loader_json --endpoint "$PROXY" --mode direct "${common[@]}")
    RES[$label:T:$rep]=$(loader_json --endpoint "$TPROXY" --ca "$CA" --mode direct "${common[@]}")
    RES[$label:N:$rep]=$(loader_json --endpoint "$NGX" --mode http "${common[@]}")
    RES[$label:NS:$rep]=$(loader_json --endpoint "$NGXS" --ca "$CA" --mode http "${common[@]}")
  done
done

# wrk on one 16 MiB object, over HTTPS: Shoal's target against nginx
TURL=$(curl -s --cacert "$CA" -o /dev/null -w '%{redirect_url}' "$TPROXY/v1/objects/bench/t16MiB/o00000000")
wrk_mibs() { # URL -> MiB/s
  wrk -t2 -c8 -d"${SECS}s" "$1" 2>/dev/null |
    python3 -c 'import re,sys; t=sys.stdin.read(); m=re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", t); f={"B":1/1048576,"KB":1/1024,"MB":1,"GB":1024}[m.group(2)]; print("%.1f" % (float(m.group(1))*f))'
}
WT=$(wrk_mibs "$TURL")
WN=$(wrk_mibs "$NGXS/bench/t16MiB/o00000000")

median() { # LABEL KIND FIELD
  local v=()
  for rep in $(seq "$REPS"); do v+=("$(field "${RES[$1:$2:$rep]}" GET "$3")"); done
  python3 -c 'import sys, statistics; print(statistics.median(map(float, sys.argv[1:])))' "${v[@]}"
}
printf '\n== warm GET over HTTPS vs plain HTTP, straight to the target, %s workers, median of %s interleaved %ss runs ==\n' "$WORKERS" "$REPS" "$SECS"
printf 'encryption: %s\n' "${MODE:-unknown}"
printf '%-6s %-22s %10s %8s %9s %9s  %s\n' size system MiB/s p99_ms vs_plain vs_nginx goal
declare -A names=([P]="shoal, plain HTTP" [T]="shoal, HTTPS" [N]="nginx, plain HTTP" [NS]="nginx, HTTPS")
for spec in $SPECS; do
  IFS=: read -r label bytes count <<<"$spec"
  p=$(median "$label" P mib_per_s); n=$(median "$label" N mib_per_s); ns=$(median "$label" NS mib_per_s)
  for kind in P T N NS; do
    mb=$(median "$label" "$kind" mib_per_s); p99=$(median "$label" "$kind" p99)
    vs_plain="" vs_ngx="" goal=""
    case $kind in
      T) vs_plain="$(ratio "$mb" "$p")x"; vs_ngx="$(ratio "$mb" "$ns")x"
         goal="vs nginx HTTPS 0.9x $(verdict "$(ratio "$mb" "$ns")" 0.9); vs plain 0.8x (kernel TLS) $(verdict "$(ratio "$mb" "$p")" 0.8)" ;;
      P) vs_ngx="$(ratio "$mb" "$n")x" ;;
      NS) vs_plain="$(ratio "$mb" "$n")x" ;;
    esac
    errs=0
    for rep in $(seq "$REPS"); do errs=$((errs + $(errors "${RES[$label:$kind:$rep]}"))); done
    [ "$errs" = 0 ] || goal="$goal errors=$errs"
    printf '%-6s %-22s %10.1f %8.2f %9s %9s  %s\n' "$label" "${names[$kind]}" "$mb" \
      "$(python3 -c "print($p99/1000)")" "$vs_plain" "$vs_ngx" "$goal"
  done
done
printf 'witness: wrk, one 16 MiB object over HTTPS: shoal %s MiB/s, nginx %s MiB/s (%sx)\n' \
  "$WT" "$WN" "$(ratio "$WT" "$WN")"
SHOAL_DATA="$TDATA" "$ROOT/deploy/local/cluster.sh" stop >/dev/null
