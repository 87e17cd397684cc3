#!/usr/bin/env bash
# Benchmark 4: PUT throughput of 1 MiB and 16 MiB objects into a Shoal
# bucket (one copy, fsync'd before each answer) against the sequential
# write speed of the same disk, measured in the same run with dd
# (O_DIRECT-free, fdatasync at the end, like a whole-file write): native
# PUTs (redirected to the target) and S3 PUTs (streamed through the
# proxy), these also against the native PUT of their size (goal 0.8x).
source "$(dirname "$0")/lib.sh"
WORKERS=${BENCH_WORKERS:-8}
start_cluster 1
curl -sf -X PUT "$PROXY/v1/buckets/put" >/dev/null
DISK_MB=1024
disk=$(disk_write_mibs "$DISK_MB")
printf '\n== PUT vs the disk: dd of %d MiB with fdatasync, then Shoal PUTs, %d workers ==\n' "$DISK_MB" "$WORKERS"
printf '%-30s %10s %8s %8s %10s  %s\n' what MiB/s p99_ms vs_disk vs_native goal
printf '%-30s %10.1f %8s %8s\n' "disk sequential write (dd)" "$disk" "" "1.00x"
declare -A native
for api in native s3; do
  for spec in 1MiB:1048576:512 16MiB:16777216:48; do
    IFS=: read -r label bytes count <<<"$spec"
    if [ $api = native ]; then
      where=(--endpoint "$PROXY")
    else
      where=(--endpoint "$PROXY/s3" --mode s3)
    fi
    j=$(loader_json "${where[@]}" --bucket put --pct-put 100 --epochs 1 --num-objects "$count" \
        --prefix "$api$label/" --min-size "$bytes" --max-size "$bytes" --workers "$WORKERS")
    mb=$(field "$j" PUT mib_per_s)
    r=$(ratio "$mb" "$disk")
    goal="" vsn=""
    [ "$label" = 16MiB ] && [ $api = native ] && goal="0.7x $(verdict "$r" 0.7)"
    if [ $api = native ]; then
      native[$label]=$mb
    else                         # the S3 PUT's goal: 0.8x of the native one
      vsn="$(ratio "$mb" "${native[$label]}")x"
      goal="0.8x of native $(verdict "${vsn%x}" 0.8)"
    fi
    [ "$(errors "$j")" = 0 ] || goal="$goal errors=$(errors "$j")"
    printf '%-30s %10.1f %8.1f %8s %10s  %s\n' "shoal $api PUT $label" "$mb" \
      "$(python3 -c "print($(field "$j" PUT p99)/1000)")" "${r}x" "$vsn" "$goal"
  done
done
