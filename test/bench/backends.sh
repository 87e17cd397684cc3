#!/usr/bin/env bash
# Benchmark: backends beyond the default S3 account (issue 34). A first
# epoch through Shoal (cold GETs, fetched and kept) and a second (warm),
# against reading the same backend directly with the same workers, for
# Azure Blob Storage (Azurite, a public container read directly, Shoal
# signing with SharedKey through a profile) and for a second S3 endpoint
# (s3rver with its own key, through a profile). Then the same backends in
# a network namespace behind a shaped link (as cold_warm.sh), where warm
# against cold is the figure (goal 20x).
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-16}
COUNT=${BENCH_BACKEND_COUNT:-64}
SIZE=${BENCH_BACKEND_SIZE:-1048576}
FAR_DELAY=${BENCH_FAR_DELAY_MS:-10}
FAR_RATE=${BENCH_FAR_RATE:-200mbit}
AZ_ACCT=benchacct
AZ_KEY=YmVuY2gta2V5LWZvci1zaG9hbC1iZW5jaG1hcmtzLTAxMjM0NTY3
S3_KEY=BENCHKEY
S3_SECRET=bench-secret-0123
NODE_DIR="$ROOT/test"
PIDS=()
stop_servers() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null || true; done
  PIDS=()
}
trap 'stop_servers; bench_cleanup' EXIT

start_cluster 1
make_files "$BENCH_DIR/src" "$COUNT" "$SIZE" "o"

# start_azurite ADDR PORT [NS] / start_s3rver ADDR PORT [NS]: wait until up
start_azurite() {
  local addr=$1 port=$2 ns=${3:-} dir="$BENCH_DIR/azurite$2"
  mkdir -p "$dir"
  ${ns:+ip netns exec "$ns"} env AZURITE_ACCOUNTS="$AZ_ACCT:$AZ_KEY" \
    "$NODE_DIR/node_modules/.bin/azurite-blob" --blobHost "$addr" --blobPort "$port" \
    --location "$dir" --silent --skipApiVersionCheck --loose >/dev/null 2>&1 &
  PIDS+=($!)
  wait_up "http://$addr:$port/"
  (cd "$NODE_DIR" && node azblob.mjs "http://$addr:$port/$AZ_ACCT" "$AZ_ACCT" "$AZ_KEY" \
    public src && node azblob.mjs "http://$addr:$port/$AZ_ACCT" "$AZ_ACCT" "$AZ_KEY" \
    putdir src "$BENCH_DIR/src")
}
start_s3rver() {
  local addr=$1 port=$2 ns=${3:-}
  mkdir -p "$BENCH_DIR/s3rver$port"
  ${ns:+ip netns exec "$ns"} env S3RVER_ADDRESS="$addr" S3RVER_KEY="$S3_KEY:$S3_SECRET" \
    NODE_OPTIONS=--openssl-legacy-provider node "$NODE_DIR/s3rver.js" "$port" \
    "$BENCH_DIR/s3rver$port/data" /dev/null src >/dev/null 2>&1 &
  PIDS+=($!)
  wait_up "http://$addr:$port/"
  python3 - "http://$addr:$port" "$BENCH_DIR/src" "$S3_KEY" "$S3_SECRET" <<'PY'
import os, sys, boto3
from botocore.config import Config
url, d, k, s = sys.argv[1:]
c = boto3.client("s3", endpoint_url=url, aws_access_key_id=k, aws_secret_access_key=s,
                 region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
for f in sorted(os.listdir(d)):
    c.upload_file(os.path.join(d, f), "src", f)
PY
}

# one_backend LABEL KIND DIRECT_ENDPOINT BUCKET FAR: the three epochs
one_backend() {
  local label=$1 direct=$3 bucket=$4 far=$5
  local common=(--num-objects "$COUNT" --prefix o --workers "$WORKERS" --epochs 1)
  local d c w
  d=$(loader_json --endpoint "$direct" --bucket src --mode http "${common[@]}")
  c=$(loader_json --endpoint "$PROXY" --bucket "$bucket" "${common[@]}")
  w=$(loader_json --endpoint "$PROXY" --bucket "$bucket" "${common[@]}")
  local dmb cmb wmb rc rw
  dmb=$(field "$d" GET mib_per_s); cmb=$(field "$c" GET mib_per_s); wmb=$(field "$w" GET mib_per_s)
  rc=$(ratio "$cmb" "$dmb"); rw=$(ratio "$wmb" "$cmb")
  printf '%-30s %-12s %10.1f %8s\n' "$label" "direct" "$dmb" "1.00x"
  printf '%-30s %-12s %10.1f %8s  %s%s\n' "" "shoal cold" "$cmb" "${rc}x" \
    "$([ "$far" = far ] || echo "0.9x $(verdict "$rc" 0.9)")" \
    "$([ "$(errors "$c")" = 0 ] || echo " errors=$(errors "$c")")"
  printf '%-30s %-12s %10.1f %8s  %s\n' "" "shoal warm" "$wmb" "${rw}x cold" \
    "$([ "$far" = far ] && echo "20x $(verdict "$rw" 20)")"
}

# run_pair ADDR NS SUFFIX FAR: Azurite and s3rver at ADDR, through profiles
run_pair() {
  local addr=$1 ns=$2 sfx=$3 far=$4
  local azp=$((BASE_PORT + 20 + sfx * 2)) s3p=$((BASE_PORT + 21 + sfx * 2))
  start_azurite "$addr" "$azp" "$ns"
  start_s3rver "$addr" "$s3p" "$ns"
  curl -sf -X PUT "$PROXY/v1/backends/az$sfx" -d "{\"provider\": \"azure\", \"account\":
    \"$AZ_ACCT\", \"account_key\": \"$AZ_KEY\", \"endpoint\": \"http://$addr:$azp/$AZ_ACCT\"}" >/dev/null
  curl -sf -X PUT "$PROXY/v1/backends/s3b$sfx" -d "{\"provider\": \"s3\", \"endpoint\":
    \"http://$addr:$s3p\", \"access_key\": \"$S3_KEY\", \"secret_key\": \"$S3_SECRET\"}" >/dev/null
  curl -sf -X PUT "$PROXY/v1/buckets/az$sfx" \
    -d "{\"backend\": \"azure://src\", \"profile\": \"az$sfx\"}" >/dev/null
  curl -sf -X PUT "$PROXY/v1/buckets/s3b$sfx" \
    -d "{\"backend\": \"s3://src\", \"profile\": \"s3b$sfx\"}" >/dev/null
  one_backend "Azure (Azurite)${ns:+, far}" azure "http://$addr:$azp/$AZ_ACCT" "az$sfx" "$far"
  one_backend "second S3 (s3rver)${ns:+, far}" s3 "http://$addr:$s3p" "s3b$sfx" "$far"
  stop_servers
}

printf '\n== backends through profiles: %d objects of %d KiB, %d workers, one epoch each ==\n' \
  "$COUNT" $((SIZE >> 10)) "$WORKERS"
printf '%-30s %-12s %10s %8s  %s\n' backend read MiB/s ratio goal
run_pair 127.0.0.1 "" 0 near
make_far_host "$FAR_DELAY" "$FAR_RATE"
printf '(far: %s)\n' "$FAR_DESC"
run_pair "$FAR_ADDR" "$NETNS" 1 far
