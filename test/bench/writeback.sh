#!/usr/bin/env bash
# Benchmark: checkpoint writes. 1 GiB in 64 MiB objects (by default) PUT
# through the proxy into a bucket whose S3 backend (s3rver) sits in a
# network namespace shaped like a remote cloud: to a write-through bucket
# (each PUT waits for the backend) and to a write-back one (acknowledged
# once on the target's drive); then a flush job, which ends once the
# backend has it all, against the loader writing the same bytes to the
# backend directly.
source "$(dirname "$0")/lib.sh"
COUNT=${BENCH_WB_COUNT:-16}
SIZE=${BENCH_WB_SIZE:-67108864}
FAR_DELAY=${BENCH_FAR_DELAY_MS:-10}
FAR_RATE=${BENCH_FAR_RATE:-400mbit}
S3_PORT=$((BASE_PORT + 20))
S3PID=""
trap '[ -n "$S3PID" ] && kill "$S3PID" 2>/dev/null; bench_cleanup' EXIT

make_far_host "$FAR_DELAY" "$FAR_RATE"
mkdir -p "$BENCH_DIR/s3rver"
ip netns exec "$NETNS" env S3RVER_ADDRESS="$FAR_ADDR" NODE_OPTIONS=--openssl-legacy-provider \
  node "$ROOT/test/s3rver.js" "$S3_PORT" "$BENCH_DIR/s3rver/data" /dev/null direct wt wb \
  > "$BENCH_DIR/s3rver/out" 2>&1 &
S3PID=$!
EP="http://$FAR_ADDR:$S3_PORT"
for _ in $(seq 100); do curl -s -o /dev/null "$EP/" && break; sleep 0.1; done
export AWS_ACCESS_KEY_ID=S3RVER AWS_SECRET_ACCESS_KEY=S3RVER AWS_REGION=us-east-1
start_cluster 1
for b in wt wb; do
  policy=write-through; [ "$b" = wb ] && policy=write-back
  curl -sf -X PUT "$PROXY/v1/buckets/$b" -d "{\"backend\": \"s3://$b\", \"endpoint\": \"$EP\",
    \"addressing\": \"path\", \"write_policy\": \"$policy\"}" >/dev/null
done
put=(--pct-put 100 --epochs 1 --num-objects "$COUNT" --prefix ckpt/ --min-size "$SIZE"
     --max-size "$SIZE" --workers 4)
MIB=$((COUNT * SIZE >> 20))

printf '\n== checkpoint writes: %d objects of %d MiB, backend %s ==\n' "$COUNT" \
  $((SIZE >> 20)) "$FAR_DESC"
printf '%-34s %10s %10s %9s  %s\n' write seconds MiB/s ratio goal
d=$(loader_json --endpoint "$EP" --bucket direct --mode s3 "${put[@]}")
dmb=$(field "$d" PUT mib_per_s)
a=$(loader_json --endpoint "$PROXY" --bucket wt "${put[@]}")
amb=$(field "$a" PUT mib_per_s)
b=$(loader_json --endpoint "$PROXY" --bucket wb "${put[@]}")
bmb=$(field "$b" PUT mib_per_s)
t0=$(date +%s.%N)
id=$(curl -sf -X POST "$PROXY/v1/jobs" -d '{"kind": "flush", "bucket": "wb"}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
state=$(curl -sf "$PROXY/v1/jobs/$id?wait=600" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])')
t1=$(date +%s.%N)
fs=$(python3 -c "print('%.1f' % ($t1 - $t0))")
fmb=$(python3 -c "print('%.1f' % ($MIB / ($t1 - $t0)))")
sec() { python3 -c "print('%.1f' % ($MIB / float('$1')))" 2>/dev/null || echo -; }
printf '%-34s %10s %10.1f %9s\n' "PUT to the backend directly" "$(sec "$dmb")" "$dmb" "1.00x"
printf '%-34s %10s %10.1f %9s\n' "PUT, write-through bucket" "$(sec "$amb")" "$amb" \
  "$(ratio "$amb" "$dmb")x"
r=$(ratio "$bmb" "$amb")
printf '%-34s %10s %10.1f %8sx  5x of write-through %s\n' "PUT, write-back bucket (ack)" \
  "$(sec "$bmb")" "$bmb" "$r" "$(verdict "$r" 5)"
r=$(ratio "$fmb" "$dmb")
printf '%-34s %10s %10.1f %8sx  0.9x of the backend %s (%s)\n' "flush job, to the backend" "$fs" \
  "$fmb" "$r" "$(verdict "$r" 0.9)" "$state"
