#!/usr/bin/env bash
# Benchmark: small-file data sets. (1) GetBatch of BENCH_BATCH_N entries
# (10 KiB, then 1 MiB objects) against the same objects read by
# individual GETs through the proxy at the same client concurrency:
# objects/s and the ratio (goals 15x at 10 KiB, 1.7x at 1 MiB), the
# batches posted by the loader (--batch, keeping its connections as its
# individual GETs do); wrk witnesses the individual GETs (through the proxy's S3
# door, forwarded, rotating over the same names), curl (a process per
# batch) the batches. (2) ?archpath of a 10 KiB member of a
# BENCH_SHARD_MIB (1024) MiB .tar against a GET of a plain 10 KiB object,
# both through the proxy's S3 door with wrk (goal 0.8x). (3) A shard job
# packing BENCH_SHARD_JOB_N loose objects into 64 MiB .tar shards against
# the disk's sequential write, dd with fdatasync as put.sh (goal 0.7x).
source "$(dirname "$0")/lib.sh"
N=${BENCH_BATCH_N:-1000}
CONC=${BENCH_BATCH_CONC:-8}
SECS=${BENCH_SECS:-5}
SHARD_MIB=${BENCH_SHARD_MIB:-1024}
# BENCH_BATCH_PARTS: which of the three to run (to measure one quickly)
PARTS=${BENCH_BATCH_PARTS:-"batch archpath shard"}
part() { [[ " $PARTS " == *" $1 "* ]]; }
start_cluster 2
curl -sf -X PUT "$PROXY/v1/buckets/bench" >/dev/null

# batches: CONC clients each posting the whole list again and again for
# SECS, following the proxy's redirect to the target that assembles it:
# entries/s. The loader (--batch) keeps its connections, as a data loader
# does and as its own individual GETs do; the witness runs a new curl per
# batch.
batch_loader() {
  local out failed
  out=$(loader_json --endpoint "$PROXY" --bucket bench --mode shoal --num-objects "$2" \
        --prefix "$1" --workers "$CONC" --duration "${SECS}s" --batch "$2") || true   # 3: some failed
  failed=$(field "$out" GET failed)
  echo "$(field "$out" GET entries_per_s) $failed"
  [ "$failed" = 0 ] ||   # which class: timeouts, resets, 4xx...
    python3 -c 'import json,sys; print("  loader:", json.loads(sys.argv[1])["ops"]["GET"]["errors"])' "$out" >&2
}
batch_curl() {
  python3 - "$PROXY" "$1" "$CONC" "$SECS" "$2" <<'PY'
import subprocess, sys, threading, time
proxy, req, conc, secs, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
done, bad, lock = [0], [0], threading.Lock()
end = time.time() + secs
def one():
    p = subprocess.run(["curl", "-s", "-L", "--post301", "--data-binary", "@" + req,
                        "-o", "/dev/null", "-w", "%{http_code} %{size_download}",
                        proxy + "/v1/batch"], capture_output=True, text=True)
    return p.stdout.split()[0] == "200" if p.stdout else False
def run():
    while time.time() < end:
        ok = one()
        with lock:
            done[0] += ok
            bad[0] += not ok
t0 = time.time()
ts = [threading.Thread(target=run) for _ in range(conc)]
[t.start() for t in ts]
[t.join() for t in ts]
dt = time.time() - t0
print("%.0f %d" % (done[0] * n / dt, bad[0]))
PY
}

if part batch; then
printf '\n== GetBatch vs individual GETs through the proxy: %d entries, %d clients, %ss ==\n' "$N" "$CONC" "$SECS"
printf '%-7s %14s %14s %14s %14s %9s  goal\n' size individual wrk_witness batch batch_curl ratio
for label in 10KiB 1MiB; do
  case $label in 10KiB) size=10240 goal=15 ;; 1MiB) size=1048576 goal=1.7 ;; esac
  n=$N
  [ "$label" = 1MiB ] && n=$((N / 4))
  "$LOADER" --endpoint "$PROXY" --bucket bench --mode direct --pct-put 100 --epochs 1 \
    --num-objects "$n" --prefix "b$label/o" --min-size "$size" --max-size "$size" \
    --workers 16 --json >/dev/null
  ind=$(loader_json --endpoint "$PROXY" --bucket bench --mode shoal --num-objects "$n" \
        --prefix "b$label/o" --workers "$CONC" --duration "${SECS}s")
  wout=$(WRK_PATH="/s3/bench/b$label/o" WRK_N=$n wrk -t2 -c"$CONC" -d"${SECS}s" \
         -s "$(dirname "$0")/rotate.lua" "$PROXY")
  wrk_rps=$(awk '/^Requests\/sec/ {print $2}' <<<"$wout")
  python3 - "$BENCH_DIR/req-$label.json" "$n" "$label" <<'PY'
import json, sys
path, n, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
json.dump({"entries": [{"bucket": "bench", "name": "b%s/o%08d" % (label, i)} for i in range(n)]},
          open(path, "w"))
PY
  read -r brate bbad <<<"$(batch_loader "b$label/o" "$n")"
  read -r crate cbad <<<"$(batch_curl "$BENCH_DIR/req-$label.json" "$n")"
  irate=$(field "$ind" GET ops_per_s)
  r=$(ratio "$brate" "$irate")
  printf '%-7s %12.0f/s %12.0f/s %12.0f/s %12.0f/s %8sx  %sx %s\n' "$label" "$irate" "$wrk_rps" \
    "$brate" "$crate" "$r" "$goal" "$(verdict "$r" "$goal")"
  [ "$bbad" = 0 ] && [ "$cbad" = 0 ] || echo "  $bbad + $cbad batches failed" >&2
done
fi

# (2) a member of a large shard against a plain object of the same size
if part archpath; then
members=$((SHARD_MIB * 1024 / 10))
python3 - "$BENCH_DIR/shard.tar" "$members" <<'PY'
import io, os, sys, tarfile
path, n = sys.argv[1], int(sys.argv[2])
block = os.urandom(10240 + 251)
with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as t:
    for i in range(n):
        ti = tarfile.TarInfo("m%08d" % i)
        ti.size = 10240
        t.addfile(ti, io.BytesIO(block[i % 251:i % 251 + 10240]))
PY
curl -sfL -T "$BENCH_DIR/shard.tar" "$PROXY/v1/objects/bench/shard.tar" >/dev/null
curl -sfL -o /dev/null "$PROXY/v1/objects/bench/shard.tar?archpath=m00000000"   # the index
rm -f "$BENCH_DIR/shard.tar"
WRK_NAMES=500
plain=$(WRK_PATH="/s3/bench/b10KiB/o" WRK_N=$WRK_NAMES wrk -t2 -c"$CONC" -d"${SECS}s" \
        -s "$(dirname "$0")/rotate.lua" "$PROXY" | awk '/^Requests\/sec/ {print $2}')
aout=$(WRK_PATH="/s3/bench/shard.tar?archpath=m" WRK_N=$WRK_NAMES wrk -t2 -c"$CONC" \
       -d"${SECS}s" -s "$(dirname "$0")/rotate.lua" "$PROXY")
arch=$(awk '/^Requests\/sec/ {print $2}' <<<"$aout")
abad=$(awk '/Non-2xx/ {print $NF}' <<<"$aout")
r=$(ratio "$arch" "$plain")
printf '\n== ?archpath of a 10 KiB member of a %d MiB .tar (%d members) vs a plain 10 KiB GET, wrk, %d connections ==\n' "$SHARD_MIB" "$members" "$CONC"
printf '%-30s %12.0f req/s\n' "plain 10 KiB object" "$plain"
printf '%-30s %12.0f req/s %8sx  0.8x %s\n' "archpath member" "$arch" "$r" "$(verdict "$r" 0.8)"
[ -z "$abad" ] || echo "  archpath: $abad non-2xx answers" >&2
fi

# (3) a shard job packing loose samples against the disk's sequential
# write (dd with fdatasync, as put.sh measures it)
if part shard; then
SH_N=${BENCH_SHARD_JOB_N:-4000}
SH_SIZE=${BENCH_SHARD_JOB_SIZE:-65536}
"$LOADER" --endpoint "$PROXY" --bucket bench --mode direct --pct-put 100 --epochs 1 \
  --num-objects "$SH_N" --prefix "ds/s" --min-size "$SH_SIZE" --max-size "$SH_SIZE" \
  --workers 16 --json >/dev/null
curl -sf -X PUT "$PROXY/v1/buckets/benchshards" >/dev/null
disk=$(disk_write_mibs 512)
jid=$(curl -sf -X POST "$PROXY/v1/jobs" -d '{"kind": "shard", "bucket": "bench",
  "prefix": "ds/", "to": "benchshards", "shard_size": 67108864,
  "output_template": "train-{000000..999999}.tar"}' | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
job=$(curl -sf "$PROXY/v1/jobs/$jid?wait=600")
read -r state shards mibs <<<"$(python3 -c 'import json,sys; j=json.loads(sys.argv[1])
print(j["state"], j["shards"], "%.1f" % (j["bytes"] / 1048576 / ((j["end_ns"] - j["start_ns"]) / 1e9)))' "$job")"
r=$(ratio "$mibs" "$disk")
printf '\n== shard job: %d objects of %d bytes into 64 MiB .tar shards, vs the disk ==\n' "$SH_N" "$SH_SIZE"
printf '%-30s %10.1f MiB/s\n' "disk sequential write (dd)" "$disk"
printf '%-30s %10.1f MiB/s %8sx  0.7x %s (%s, %s shards)\n' "shard job" "$mibs" "$r" \
  "$(verdict "$r" 0.7)" "$state" "$shards"
fi
