#!/usr/bin/env bash
# Benchmark: batch prefetch jobs. The same objects (64 of 4 MiB by
# default) behind nginx as a path-style S3 backend, on loopback and in a
# network namespace shaped like a remote cloud: a prefetch job's throughput
# against a first epoch of cold GETs (loopback) and against reading the
# backend directly (far); and warm GETs of other objects while a prefetch
# from the far backend runs, against the same load with no job. Last, a
# copy job of 1 GiB from one Shoal bucket to another, against PUTs of the
# same objects through the proxy.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-16}
COUNT=${BENCH_JOB_COUNT:-64}
SIZE=${BENCH_JOB_SIZE:-4194304}
SECS=${BENCH_SECS:-3}
FAR_DELAY=${BENCH_FAR_DELAY_MS:-10}
FAR_RATE=${BENCH_FAR_RATE:-400mbit}

start_cluster 1
make_files "$BENCH_DIR/www/src" "$COUNT" "$SIZE" "o"
NGX_PORT=$((BASE_PORT + 10))
LAST=$(printf 'o%08d' $((COUNT - 1)))
TEMPLATE="o{00000000..${LAST#o}}"

# bucket NAME ENDPOINT: a Shoal bucket over the backend's "src"
bucket() {
  curl -sf -X PUT "$PROXY/v1/buckets/$1" \
    -d "{\"backend\": \"s3://src\", \"endpoint\": \"$2\", \"addressing\": \"path\"}" >/dev/null
}

# prefetch BUCKET: run a prefetch of every object to its end; prints its JSON
prefetch() {
  local id
  id=$(curl -sf -X POST "$PROXY/v1/jobs" \
    -d "{\"kind\": \"prefetch\", \"bucket\": \"$1\", \"template\": \"$TEMPLATE\"}" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
  curl -sf "$PROXY/v1/jobs/$id?wait=600"
}

# jfield JSON NAME: a top-level number of a job's JSON
jfield() {
  python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$1" "$2"
}

printf '\n== prefetch jobs: %d objects of %d MiB ==\n' "$COUNT" $((SIZE >> 20))
printf '%-30s %-26s %10s %9s  %s\n' backend read MiB/s ratio goal
common=(--num-objects "$COUNT" --prefix o --workers "$WORKERS" --epochs 1)

# loopback: the job against Shoal's own cold GETs of the same objects
start_nginx "$BENCH_DIR/www" "$NGX_PORT"
EP="http://127.0.0.1:$NGX_PORT"
bucket cold "$EP"
bucket pf "$EP"
c=$(loader_json --endpoint "$PROXY" --bucket cold "${common[@]}")
cmb=$(field "$c" GET mib_per_s)
j=$(prefetch pf)
jmb=$(jfield "$j" mib_per_s)
r=$(ratio "$jmb" "$cmb")
printf '%-30s %-26s %10.1f %9s\n' "nginx on loopback" "shoal cold GETs ($WORKERS)" "$cmb" "1.00x"
printf '%-30s %-26s %10.1f %8sx  0.9x %s%s\n' "" "prefetch job" "$jmb" "$r" "$(verdict "$r" 0.9)" \
  "$([ "$(jfield "$j" errors)" = 0 ] || echo " errors=$(jfield "$j" errors)")"
stop_nginx

# far: the job against reading the shaped backend directly
make_far_host "$FAR_DELAY" "$FAR_RATE"
start_nginx "$BENCH_DIR/www" "$NGX_PORT" "" "$FAR_ADDR" "$NETNS"
FEP="http://$FAR_ADDR:$NGX_PORT"
bucket far "$FEP"
bucket far2 "$FEP"
d=$(loader_json --endpoint "$FEP" --bucket src --mode http "${common[@]}")
dmb=$(field "$d" GET mib_per_s)
j=$(prefetch far)
jmb=$(jfield "$j" mib_per_s)
r=$(ratio "$jmb" "$dmb")
printf '%-30s %-26s %10.1f %9s\n' "far: $FAR_DESC" "the backend, directly" "$dmb" "1.00x"
printf '%-30s %-26s %10.1f %8sx  0.9x %s\n' "" "prefetch job" "$jmb" "$r" "$(verdict "$r" 0.9)"

# warm GETs of the "cold" bucket (warm by now), alone and beside a prefetch
warm=(--num-objects "$COUNT" --prefix o --workers "$WORKERS" --duration "${SECS}s")
a=$(loader_json --endpoint "$PROXY" --bucket cold "${warm[@]}")
id=$(curl -sf -X POST "$PROXY/v1/jobs" \
  -d "{\"kind\": \"prefetch\", \"bucket\": \"far2\", \"template\": \"$TEMPLATE\"}" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
b=$(loader_json --endpoint "$PROXY" --bucket cold "${warm[@]}")
state=$(curl -sf "$PROXY/v1/jobs/$id" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
curl -sf -X DELETE "$PROXY/v1/jobs/$id" >/dev/null || true
amb=$(field "$a" GET mib_per_s); bmb=$(field "$b" GET mib_per_s)
r=$(ratio "$bmb" "$amb")
printf '%-30s %-26s %10.1f %9s\n' "warm GETs, $WORKERS workers" "no job" "$amb" "1.00x"
printf '%-30s %-26s %10.1f %8sx  0.7x %s (the job was %s at the end)\n' "" "a prefetch running" \
  "$bmb" "$r" "$(verdict "$r" 0.7)" "$state"
stop_nginx

# copy: 1 GiB (64 of 16 MiB by default) written by PUTs, then copied
CCOUNT=${BENCH_COPY_COUNT:-64}
CSIZE=${BENCH_COPY_SIZE:-16777216}
curl -sf -X PUT "$PROXY/v1/buckets/csrc" >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/cdst" >/dev/null
p=$(loader_json --endpoint "$PROXY" --bucket csrc --pct-put 100 --epochs 1 \
    --num-objects "$CCOUNT" --prefix c --min-size "$CSIZE" --max-size "$CSIZE" --workers 8)
pmb=$(field "$p" PUT mib_per_s)
id=$(curl -sf -X POST "$PROXY/v1/jobs" -d '{"kind": "copy", "bucket": "csrc", "to": "cdst"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
j=$(curl -sf "$PROXY/v1/jobs/$id?wait=600")
jmb=$(jfield "$j" mib_per_s)
r=$(ratio "$jmb" "$pmb")
printf '%-30s %-26s %10.1f %9s\n' "copy $((CCOUNT * CSIZE >> 20)) MiB, Shoal->Shoal" \
  "PUTs through the proxy (8)" "$pmb" "1.00x"
printf '%-30s %-26s %10.1f %8sx  %s\n' "" "copy job" "$jmb" "$r" \
  "$(jfield "$j" copied) copied, $(jfield "$j" errors) errors"
