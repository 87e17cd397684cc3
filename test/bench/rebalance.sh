#!/usr/bin/env bash
# Benchmark: rebalance. Three targets hold 5 GiB in 4 MiB objects; a
# fourth joins the quiet cluster and about a quarter of the bytes move to
# it, target to target: the rebalance job's MiB/s (bytes moved over its
# run time) against the disk's sequential write speed (dd with fdatasync,
# as put.sh measures it). Then the fourth goes into maintenance while
# clients read, so what it took moves back, paced while clients are
# served (rebalance_busy_mbps): warm GETs during that rebalance against
# the same load on the quiet cluster before, in one-second slices of the
# loader (8 workers, checksums verified) taken until the job ends, each
# followed by a slice of wrk on one object through the proxy's S3 relay,
# the witness.
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-8}
COUNT=${BENCH_REB_COUNT:-1280}
SIZE=${BENCH_REB_SIZE:-4194304}
SECS=1

export SHOAL_EXTRA_ARGS="--log_level warn --keepalive_ms 300 --node_timeout_ms 3000 ${BENCH_REB_ARGS:-}"
export SHOAL_MOUNTPATHS=1
export SHOAL_DATA="$BENCH_DIR/cluster" SHOAL_PORT=$BASE_PORT SHOAL_TARGETS=3
PROXY=$("$ROOT/deploy/local/cluster.sh" start)
curl -sf -X PUT "$PROXY/v1/buckets/reb" >/dev/null

DISK_MB=512
disk=$(disk_write_mibs "$DISK_MB")

loader_json --endpoint "$PROXY" --bucket reb --pct-put 100 --epochs 1 --num-objects "$COUNT" \
  --prefix o --min-size "$SIZE" --max-size "$SIZE" --workers "$WORKERS" >/dev/null
ONE="$PROXY/s3/reb/o00000007"
gets() { # -> the loader's JSON summary of SECS seconds of verified GETs
  loader_json --endpoint "$PROXY" --bucket reb --num-objects "$COUNT" --prefix o \
    --workers "$WORKERS" --duration "${SECS}s" --verify
}
wrk_rps() {
  wrk -t1 -c4 -d"${SECS}s" "$ONE" | awk '/^Requests\/sec/ {print $2}'
}
quiet=$(gets)
quiet_wrk=$(wrk_rps)
for _ in 1 2; do  # the quiet figures: the last of a few slices
  quiet=$(gets)
  quiet_wrk=$(wrk_rps)
done

cmap_version() {
  curl -s "$PROXY/v1/cluster" | python3 -c 'import json,sys; print(json.load(sys.stdin)["version"])'
}
jstate() { # JOB -> its state, "starting" before any target has it
  curl -sf "$PROXY/v1/jobs/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["state"])' 2>/dev/null || echo starting
}
# job_figures JOB -> "MiB-moved MiB/s state errors", once it ended
job_figures() {
  local job
  job=$(curl -sf "$PROXY/v1/jobs/$1?wait=600")
  python3 -c '
import json, sys
j = json.loads(sys.argv[1])
for e in j["error_names"]:
    print("rebalance error: %s: %s" % (e["name"], e["reason"]), file=sys.stderr)
secs = (j["end_ns"] - j["start_ns"]) / 1e9
print("%.1f %.1f %s %d" % (j["bytes"] / 1048576, j["bytes"] / 1048576 / secs if secs > 0 else 0,
                           j["state"], j["errors"]))' "$job"
}

# 1. the fourth target joins a quiet cluster: the rebalance at full speed
"$ROOT/deploy/local/cluster.sh" start-node t3
for _ in $(seq 200); do
  n=$(curl -s "$PROXY/v1/cluster" | python3 -c '
import json, sys
m = json.load(sys.stdin)
print(sum(n["role"] == "target" and n["state"] == "active" for n in m["nodes"]))')
  [ "$n" = 4 ] && break
  sleep 0.1
done
read -r moved_mb reb_mbs reb_state reb_errors < <(job_figures "$(printf 'ba1a%028x' "$(cmap_version)")")

# 2. the new target goes into maintenance while clients read: what it took
# moves back, paced (rebalance_busy_mbps) while they are served
T3=$(curl -s "$PROXY/v1/cluster" | python3 -c '
import json, sys
m = json.load(sys.stdin)
print([n["id"] for n in m["nodes"] if n["url"].endswith(":%s" % sys.argv[1])][0])' "$((BASE_PORT + 4))")
V=$(curl -sf -X PUT "$PROXY/v1/cluster/nodes/$T3?maintenance" | python3 -c 'import json,sys; print(json.load(sys.stdin)["cmap_version"])')
JOB=$(printf 'ba1a%028x' "$V")
slices=() wslices=()
for _ in $(seq 300); do
  st=$(jstate "$JOB")
  [ "$st" = running ] || [ "$st" = starting ] || break
  g=$(gets)
  [ "$(jstate "$JOB")" = running ] || break   # a slice counts only if the job ran all through it
  slices+=("$(field "$g" GET mib_per_s):$(errors "$g")")
  [ -n "${BENCH_DEBUG:-}" ] && echo "slice: $(field "$g" GET p50) $(field "$g" GET p99) $(field "$g" GET mib_per_s)" >&2
  w=$(wrk_rps)
  [ "$(jstate "$JOB")" = running ] && wslices+=("$w")
done
read -r back_mb back_mbs back_state back_errors < <(job_figures "$JOB")

printf '\n== rebalance: %d objects of %d MiB on 3 targets, a 4th joins, then goes into maintenance ==\n' \
  "$COUNT" $((SIZE >> 20))
printf '%-44s %10s %9s  %s\n' what MiB/s ratio goal
printf '%-44s %10.1f %9s\n' "disk sequential write (dd, $DISK_MB MiB)" "$disk" "1.00x"
r=$(ratio "$reb_mbs" "$disk")
printf '%-44s %10.1f %8sx  0.5x %s (%s MiB moved, %s, %s errors)\n' "rebalance, a join, quiet cluster" \
  "$reb_mbs" "$r" "$(verdict "$r" 0.5)" "$moved_mb" "$reb_state" "$reb_errors"
printf '%-44s %10.1f %8sx  (%s MiB moved, %s, %s errors)\n' "rebalance, maintenance, clients reading" \
  "$back_mbs" "$(ratio "$back_mbs" "$disk")" "$back_mb" "$back_state" "$back_errors"
qmb=$(field "$quiet" GET mib_per_s)
read -r dmb derr n <<<"$(python3 -c '
import sys
v = [a.split(":") for a in sys.argv[1:]]
print("%.1f %d %d" % (sum(float(a) for a, _ in v) / len(v) if v else 0,
                      sum(int(e) for _, e in v), len(v)))' "${slices[@]}")"
printf '%-44s %10.1f %9s  (%s errors)\n' "warm GETs, quiet cluster (loader)" "$qmb" "1.00x" \
  "$(errors "$quiet")"
r=$(ratio "$dmb" "$qmb")
printf '%-44s %10.1f %8sx  0.6x %s (%s slices of 1 s, %s errors)\n' \
  "warm GETs while it rebalances (loader)" "$dmb" "$r" "$(verdict "$r" 0.6)" "$n" "$derr"
qw=$(python3 -c "print('%.1f' % ($quiet_wrk * $SIZE / 1048576))")
dw=$(python3 -c '
import sys
v = [float(a) for a in sys.argv[2:]]
print("%.1f" % (sum(v) / len(v) * int(sys.argv[1]) / 1048576 if v else 0))' "$SIZE" "${wslices[@]}")
printf '%-44s %10.1f %9s\n' "witness: wrk, one object via S3, quiet" "$qw" "1.00x"
printf '%-44s %10.1f %8sx  (%s slices)\n' "witness: wrk, the same while it rebalances" "$dw" \
  "$(ratio "$dw" "$qw")" "${#wslices[@]}"
