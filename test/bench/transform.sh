#!/usr/bin/env bash
# Benchmark: transforms, with the C example (shoal-transform-identity, the
# bytes as they are) as the transform, on one target. Inline: warm GETs
# straight from the target (shoal-loader, direct mode) with
# ?transform=ident against the same GETs without, at 1 MiB (goal 0.6x)
# and 10 KiB (reported); wrk witnesses the 1 MiB row. Offline: a transform
# job of 64 objects of 4 MiB into another bucket against a copy job of
# the same objects (goal 0.7x), both BENCH_XF_JOB_CONCURRENCY (8) objects
# at once per target.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-16}
SECS=${BENCH_SECS:-5}
JCOUNT=${BENCH_XF_JOB_COUNT:-64}
JSIZE=${BENCH_XF_JOB_SIZE:-4194304}
JCONC=${BENCH_XF_JOB_CONCURRENCY:-8}   # objects at once per target, both jobs

start_cluster 1
T0="http://127.0.0.1:$((BASE_PORT + 1))"
curl -sf -X PUT "$PROXY/v1/transforms/ident" \
  -d "{\"command\": [\"$ROOT/build/bin/shoal-transform-identity\"]}" >/dev/null
for _ in $(seq 100); do
  curl -sf "$PROXY/v1/transforms" | grep -q '"state":"running"' && break
  sleep 0.1
done

# jfield JSON NAME: a top-level number of a job's JSON
jfield() {
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}
# job SPEC: run a job to its end; prints its JSON
job() {
  local id
  id=$(curl -sf -X POST "$PROXY/v1/jobs" -d "$1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  curl -sf "$PROXY/v1/jobs/$id?wait=600"
}

printf '\n== inline transforms: warm GETs straight from the target, %d workers ==\n' "$WORKERS"
printf '%-8s %-34s %10s %10s %9s  %s\n' size read req/s MiB/s ratio goal
curl -sf -X PUT "$PROXY/v1/buckets/xb" >/dev/null
for row in "1MiB 1048576 64 0.6" "10KiB 10240 2000 -"; do
  read -r label size count goal <<<"$row"
  put=(--endpoint "$PROXY" --bucket xb --prefix "x$label/o" --num-objects "$count"
       --min-size "$size" --max-size "$size")
  loader_json "${put[@]}" --pct-put 100 --epochs 1 --workers 8 >/dev/null
  get=("${put[@]}" --mode direct --workers "$WORKERS" --duration "${SECS}s")
  a=$(loader_json "${get[@]}")
  b=$(loader_json "${get[@]}" --query transform=ident)
  for run in a b; do
    j=${!run}
    [ "$(errors "$j")" = 0 ] || echo "  ($run: $(errors "$j") errors)"
  done
  aops=$(field "$a" GET ops_per_s) bops=$(field "$b" GET ops_per_s)
  amb=$(field "$a" GET mib_per_s) bmb=$(field "$b" GET mib_per_s)
  r=$(ratio "$bmb" "$amb")
  printf '%-8s %-34s %10.0f %10.1f %9s\n' "$label" "plain GET" "$aops" "$amb" "1.00x"
  if [ "$goal" = - ]; then
    printf '%-8s %-34s %10.0f %10.1f %8sx  (reported)\n' "" "?transform=ident" "$bops" "$bmb" "$r"
  else
    printf '%-8s %-34s %10.0f %10.1f %8sx  %sx %s\n' "" "?transform=ident" "$bops" "$bmb" "$r" \
      "$goal" "$(verdict "$r" "$goal")"
  fi
done

# wrk: the 1 MiB row again, an independent client on the same objects
printf '\n== wrk witness: 1 MiB GETs from the target, %d connections, %ss ==\n' "$WORKERS" "$SECS"
printf '%-34s %10s %9s  %s\n' read req/s ratio non-2xx
base_rps=""
for q in "" "transform=ident"; do
  out=$(WRK_PATH=/v1/objects/xb/x1MiB/o WRK_N=64 WRK_QUERY=$q wrk -t2 -c"$WORKERS" \
        -d"${SECS}s" -s "$(dirname "$0")/rotate.lua" "$T0")
  rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out" | tr -d ' ')
  [ -n "$base_rps" ] || base_rps=$rps
  printf '%-34s %10.0f %8sx  %s\n' "${q:-plain GET}" "$rps" "$(ratio "$rps" "$base_rps")" \
    "${bad:-0}"
done

# offline: a copy job and a transform job of the same objects
curl -sf -X PUT "$PROXY/v1/buckets/jsrc" >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/jcopy" >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/jxf" >/dev/null
loader_json --endpoint "$PROXY" --bucket jsrc --pct-put 100 --epochs 1 --workers 8 \
  --num-objects "$JCOUNT" --prefix j --min-size "$JSIZE" --max-size "$JSIZE" >/dev/null
c=$(job "{\"kind\": \"copy\", \"bucket\": \"jsrc\", \"to\": \"jcopy\", \"concurrency\": $JCONC}")
x=$(job "{\"kind\": \"transform\", \"transform\": \"ident\", \"bucket\": \"jsrc\", \"to\": \"jxf\",
          \"concurrency\": $JCONC}")
cmb=$(jfield "$c" mib_per_s) xmb=$(jfield "$x" mib_per_s)
r=$(ratio "$xmb" "$cmb")
printf '\n== transform job: %d objects of %d MiB, bucket to bucket, %d at once ==\n' "$JCOUNT" \
  $((JSIZE >> 20)) "$JCONC"
printf '%-34s %10s %9s  %s\n' job MiB/s ratio goal
printf '%-34s %10.1f %9s  %s copied, %s errors\n' "copy" "$cmb" "1.00x" "$(jfield "$c" copied)" \
  "$(jfield "$c" errors)"
printf '%-34s %10.1f %8sx  0.7x %s (%s transformed, %s errors)\n' "transform (identity)" "$xmb" \
  "$r" "$(verdict "$r" 0.7)" "$(jfield "$x" transformed)" "$(jfield "$x" errors)"
