#!/usr/bin/env bash
# Benchmark 5: the small-object rate (4 KiB PUTs and GETs per second,
# kept in their records, against the same with data files) and
# list-objects speed (native pages of 10000, S3 ListObjectsV2 pages of
# 1000) over a bucket of many names, with the target's RSS
# and metadata bytes per object. BENCH_LIST_NAMES sets the bucket's size
# (default 50000, sized for about a minute; 1000000 for the full run).
source "$(dirname "$0")/lib.sh"
N=${BENCH_LIST_NAMES:-50000}
WORKERS=${BENCH_WORKERS:-32}
REF_N=${BENCH_REF_NAMES:-$N}
# The same-run reference: the same 4 KiB PUTs and GETs with every object a
# data file (--inline_max 0), on a cluster of its own, stopped before the
# measured one starts.
ref_dir="$BENCH_DIR/cluster-files"
REF=$(SHOAL_DATA="$ref_dir" SHOAL_PORT=$((BASE_PORT + 100)) SHOAL_TARGETS=1 SHOAL_MOUNTPATHS=1 \
      SHOAL_EXTRA_ARGS="--log_level warn --inline_max 0" "$ROOT/deploy/local/cluster.sh" start)
curl -sf -X PUT "$REF/v1/buckets/small" >/dev/null
fput=$(loader_json --endpoint "$REF" --bucket small --mode direct --pct-put 100 --epochs 1 \
       --num-objects "$REF_N" --prefix s/ --min-size 4KiB --max-size 4KiB --workers "$WORKERS")
fget=$(loader_json --endpoint "$REF" --bucket small --mode direct --num-objects "$REF_N" \
       --prefix s/ --workers "$WORKERS" --duration 5s)
ffiles=$(find "$ref_dir"/t0/mp*/data -type f | wc -l)
# wrk witnesses the GET rows: the same names, straight from the target
wrk_get() {
  WRK_PATH=/v1/objects/small/s/ WRK_N=$2 wrk -t2 -c"$WORKERS" -d5s \
    -s "$(dirname "$0")/rotate.lua" "$1" | awk '/^Requests\/sec/ {print $2}'
}
fwrk=$(wrk_get "http://127.0.0.1:$((BASE_PORT + 101))" "$REF_N")
SHOAL_DATA="$ref_dir" "$ROOT/deploy/local/cluster.sh" stop >/dev/null
start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/small" >/dev/null
put=$(loader_json --endpoint "$PROXY" --bucket small --mode direct --pct-put 100 --epochs 1 \
      --num-objects "$N" --prefix s/ --min-size 4KiB --max-size 4KiB --workers "$WORKERS")
get=$(loader_json --endpoint "$PROXY" --bucket small --mode direct --num-objects "$N" \
      --prefix s/ --workers "$WORKERS" --duration 5s)
list=$(python3 - "$PROXY" "$N" <<'PY'
import json, sys, time, urllib.request, urllib.parse
proxy, n = sys.argv[1], int(sys.argv[2])
t0, names, token, pages = time.time(), 0, "", 0
while True:
    q = urllib.parse.urlencode({"limit": 10000, "token": token})
    page = json.load(urllib.request.urlopen("%s/v1/buckets/small/objects?%s" % (proxy, q)))
    names += len(page["objects"]); pages += 1
    token = page["next"]
    if not token:
        break
dt = time.time() - t0
print("%d %d %.3f" % (names, pages, dt))
PY
)
read -r listed pages lsecs <<<"$list"
# The same bucket through S3 ListObjectsV2 (pages of 1000, S3's most).
s3list=$(python3 - "$PROXY" <<'PY'
import re, sys, time, urllib.request, urllib.parse
proxy = sys.argv[1]
t0, names, token, pages = time.time(), 0, None, 0
while True:
    q = {"list-type": "2", "max-keys": "1000"}
    if token:
        q["continuation-token"] = token
    body = urllib.request.urlopen("%s/s3/small?%s" % (proxy, urllib.parse.urlencode(q))).read()
    names += body.count(b"<Key>"); pages += 1
    m = re.search(rb"<NextContinuationToken>([^<]*)</NextContinuationToken>", body)
    if not m:
        break
    token = m.group(1).decode()
dt = time.time() - t0
print("%d %d %.3f" % (names, pages, dt))
PY
)
read -r s3listed s3pages s3secs <<<"$s3list"
tpid=$(cat "$BENCH_DIR/cluster/t0/pid")
rss=$(awk '/VmRSS/ {print $2}' "/proc/$tpid/status")
meta=$(du -sk "$BENCH_DIR"/cluster/t0/mp*/meta | awk '{s+=$1} END {print s}')
files=$(find "$BENCH_DIR"/cluster/t0/mp*/data -type f | wc -l)
iwrk=$(wrk_get "http://127.0.0.1:$((BASE_PORT + 1))" "$N")
pops=$(field "$put" PUT ops_per_s) gops=$(field "$get" GET ops_per_s)
fpops=$(field "$fput" PUT ops_per_s) fgops=$(field "$fget" GET ops_per_s)
printf '\n== small objects: %d names of 4 KiB, %d workers, direct to target ==\n' "$N" "$WORKERS"
printf '%-36s %s\n' "4 KiB PUT (fsync'd), in the record" "$(python3 -c "print('%.0f ops/s, p99 %.1f ms, %.2fx of files' % ($pops, $(field "$put" PUT p99)/1000, $pops/$fpops))")  goal >= 5000/s $(verdict "$(python3 -c "print($pops/5000)")" 1.0)"
printf '%-36s %s\n' "4 KiB GET, in the record" "$(python3 -c "print('%.0f ops/s, p99 %.1f ms, %.2fx of files' % ($gops, $(field "$get" GET p99)/1000, $gops/$fgops))")  goal >= 1.0x $(verdict "$(python3 -c "print($gops/$fgops)")" 1.0)"
printf '%-36s %s\n' "4 KiB PUT (fsync'd), files" "$(python3 -c "print('%.0f ops/s, p99 %.1f ms (%d names)' % ($fpops, $(field "$fput" PUT p99)/1000, $REF_N))")"
printf '%-36s %s\n' "4 KiB GET, files" "$(python3 -c "print('%.0f ops/s, p99 %.1f ms' % ($fgops, $(field "$fget" GET p99)/1000))")"
printf '%-36s %s\n' "4 KiB GET, wrk witness" "$(python3 -c "print('%.0f req/s in the record, %.0f req/s files: %.2fx' % ($iwrk, $fwrk, $iwrk/$fwrk))")"
printf '%-36s %s\n' "data files" "$files in the records' cluster, $ffiles in the files' one"
for j in "$put" "$get" "$fput" "$fget"; do
  [ "$(errors "$j")" = 0 ] || { echo "the loader saw errors: $(errors "$j")" >&2; exit 1; }
done
printf '%-36s %s\n' "list-objects (pages of 10000)" "$(python3 -c "print('%d names in %d pages, %.2f s: %.0f names/s' % ($listed, $pages, $lsecs, $listed/$lsecs))")"
printf '%-36s %s\n' "S3 ListObjectsV2 (pages of 1000)" "$(python3 -c "print('%d names in %d pages, %.2f s: %.0f names/s' % ($s3listed, $s3pages, $s3secs, $s3listed/$s3secs))")"
printf '%-36s %s\n' "target RSS" "$((rss / 1024)) MiB"
printf '%-36s %s\n' "metadata on disk" "$(python3 -c "print('%.1f MiB, %.0f bytes per object' % ($meta/1024, $meta*1024/$N))")"
[ "$listed" = "$N" ] || { echo "listing returned $listed of $N names" >&2; exit 1; }
[ "$s3listed" = "$N" ] || { echo "S3 listing returned $s3listed of $N names" >&2; exit 1; }
