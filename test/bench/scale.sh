#!/usr/bin/env bash
# Benchmark: scale-out, simulated. 4, 8 and 16 targets, each in a network
# namespace of its own behind a link shaped to SCALE_RATE (default
# 200mbit, both ways; deploy/netns/cluster.sh), two proxies in theirs
# (SCALE_PROXY_RATE, default 10gbit: gateways), the loader on the host's
# side of the bridge. Warm GETs of 64 KiB objects (SCALE_PER_TARGET per
# target):
#   - native, direct: the loader places names from the cluster map, the
#     proxies out of the data path;
#   - S3, forwarded: two loaders, one per proxy, the proxies relaying.
# Links have jumbo frames (SCALE_MTU, default 9000), as a cluster's data
# network does. Each row prints the loader's MiB/s against N x the link's
# rate (goal 0.9x), the bytes the kernel counted on the targets' links
# over the run's middle as the witness, and the balance: the busiest
# target's bytes over the mean (goal at most 1.10). Needs root (namespaces); without it the
# benchmark says so and stops.
source "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "scale.sh: needs root and network namespaces; skipped"
  exit 0
fi
RATE=${SCALE_RATE:-200mbit}
PROXY_RATE=${SCALE_PROXY_RATE:-10gbit}
PER=${SCALE_PER_TARGET:-2048}
SECS=${SCALE_SECS:-8}
MTU=${SCALE_MTU:-9000}
SIZES=${SCALE_TARGETS:-4 8 16}
ID=${SCALE_NETNS_ID:-241}
SIZE=65536
NETCLUSTER="$ROOT/deploy/netns/cluster.sh"
export SHOAL_NETNS_ID=$ID SHOAL_NETNS_RATE=$RATE SHOAL_NETNS_PROXY_RATE=$PROXY_RATE
export SHOAL_NETNS_MTU=$MTU SHOAL_PROXIES=2 SHOAL_MOUNTPATHS=1
# a GET benchmark: the PUTs that fill it need not wait for the drive
export SHOAL_EXTRA_ARGS="--log_level warn --fsync false"
CUR="" CUR_N=0
# netc ARGS...: deploy/netns/cluster.sh on the cluster of CUR_N targets in CUR
netc() { SHOAL_DATA="$CUR" SHOAL_TARGETS=$CUR_N "$NETCLUSTER" "$@"; }
scale_cleanup() {
  if [ -n "$CUR" ]; then netc stop >/dev/null 2>&1 || true; fi
  bench_cleanup
}
trap scale_cleanup EXIT

# the link's rate in MiB/s: tc's units (kbit, mbit, gbit: powers of 1000)
link_mibs() {
  python3 - "$1" <<'PY'
import re, sys
m = re.fullmatch(r"([\d.]+)(k|m|g)?bit", sys.argv[1])
v = float(m.group(1)) * {"k": 1e3, "m": 1e6, "g": 1e9, None: 1}[m.group(2)]
print("%.2f" % (v / 8 / 1048576))
PY
}

# link_bytes N -> each target's bytes sent so far (its link's host side
# receives them), one per line
link_bytes() {
  local i
  for ((i = 0; i < $1; i++)); do cat "/sys/class/net/sh${ID}t$i/statistics/rx_bytes"; done
}

# witness BEFORE AFTER SECONDS -> "MiB/s balance": the links' sum over the
# time, and the busiest target over the mean
witness() {
  python3 - "$1" "$2" "$3" <<'PY'
import sys
a = [int(x) for x in sys.argv[1].split()]
b = [int(x) for x in sys.argv[2].split()]
d = [y - x for x, y in zip(a, b)]
mean = sum(d) / len(d)
print("%.1f %.2f" % (sum(d) / float(sys.argv[3]) / 1048576, max(d) / mean if mean else 0))
PY
}

now() { date +%s.%N; }

link=$(link_mibs "$RATE")
printf '\n== scale-out: targets in namespaces behind %s links (%.1f MiB/s each), 64 KiB warm GETs ==\n' \
  "$RATE" "$link"
printf '%-24s %4s %10s %10s %7s %10s %8s  %s\n' path N MiB/s "N x link" ratio "links MiB/s" balance goal
for n in $SIZES; do
  CUR="$BENCH_DIR/scale$n" CUR_N=$n
  PROXY=$(netc start | tail -1)
  P1=$(netc addr p1)
  curl -sf -X PUT "$PROXY/v1/buckets/scale" >/dev/null
  count=$((n * PER))
  names=(--bucket scale --num-objects "$count" --prefix "o/")
  "$LOADER" --endpoint "$PROXY" "${names[@]}" --mode direct --pct-put 100 --epochs 1 \
    --min-size $SIZE --max-size $SIZE --workers $((4 * n)) --stats-interval 0 >/dev/null
  want=$(python3 -c "print($n * $link)")
  for path in direct s3; do
    rm -f "$BENCH_DIR"/run-*.json
    if [ $path = direct ]; then
      loader_json --endpoint "$PROXY" "${names[@]}" --mode direct --workers $((4 * n)) \
        --duration "${SECS}s" > "$BENCH_DIR/run-a.json" &
      label="shoal native, direct"
    else
      for ep in "$PROXY" "$P1"; do
        loader_json --endpoint "$ep/s3" "${names[@]}" --mode s3 --workers $((2 * n)) \
          --threads 1 --duration "${SECS}s" > "$BENCH_DIR/run-${ep##*.}.json" &
      done
      label="shoal S3, 2 proxies"
    fi
    # the witness: the links' counters over the run's steady middle
    sleep 2
    before=$(link_bytes "$n") t0=$(now)
    sleep $((SECS - 4))
    after=$(link_bytes "$n") t1=$(now)
    wait
    mb=0 errs=0
    for f in "$BENCH_DIR"/run-*.json; do
      mb=$(python3 -c "print($mb + $(field "$(cat "$f")" GET mib_per_s))")
      errs=$((errs + $(errors "$(cat "$f")")))
    done
    read -r lmb bal <<<"$(witness "$before" "$after" "$(python3 -c "print($t1 - $t0)")")"
    r=$(ratio "$mb" "$want")
    goal="0.9x $(verdict "$r" 0.9), balance $(python3 -c "print('PASS' if $bal <= 1.10 else 'BELOW')")"
    [ "$errs" = 0 ] || goal="$goal errors=$errs"
    printf '%-24s %4d %10.1f %10.1f %6sx %10.1f %8s  %s\n' "$label" "$n" "$mb" "$want" "$r" \
      "$lmb" "$bal" "$goal"
  done
  netc stop >/dev/null
  CUR=""
done
