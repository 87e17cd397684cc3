#!/usr/bin/env bash
# layers.sh: fail when a dependency points up the target's layers.
#
#   test/lint/layers.sh [ROOT]      (default: the repository)
#
# The target's subsystems are folders in layers, bottom first, as the
# Makefile's TARGET_LAYERS lists them (store core space backend cluster
# redundancy xform jobs api); target/main.c sits above them all, and common/
# and ec/ below. A file may include headers of its own layer and of the
# layers below it. Every include of a header from a layer above is
# listed ("path: includes header (layer L over layer K)") and the exit
# status is 1, unless the edge is named in test/lint/layers.allow: the
# upward calls that are still to become hooks registered at start-up,
# each with its reason. An entry of that list that no longer matches an
# include is reported too, so the list only shrinks. With every folder
# in one order and no upward edge, the include graph between folders has
# no cycle; each allowed edge is one that remains.
set -euo pipefail
root=${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
cd "$root"
read -r -a layers < <(sed -n 's/^TARGET_LAYERS *= *//p' Makefile)
[ ${#layers[@]} -gt 0 ] || { echo "layers.sh: no TARGET_LAYERS in $root/Makefile" >&2; exit 2; }
allow=test/lint/layers.allow
[ -f "$allow" ] || allow=/dev/null

declare -A rank where
for i in "${!layers[@]}"; do
  rank[${layers[$i]}]=$((i + 1))
  [ -d "target/${layers[$i]}" ] || { echo "layers.sh: no folder target/${layers[$i]}" >&2; exit 2; }
  for h in target/"${layers[$i]}"/*.h; do
    [ -e "$h" ] || continue
    b=$(basename "$h")
    [ -z "${where[$b]:-}" ] || { echo "layers.sh: $b in two layers" >&2; exit 2; }
    where[$b]=${layers[$i]}
  done
done

# "file header" pairs that may point up, from the allow list
declare -A allowed used
while read -r f h _; do
  [ -n "$f" ] && [ "${f:0:1}" != "#" ] && allowed["$f $h"]=1
done < "$allow"

bad=0
check() { # FILE LAYER RANK
  local f=$1 l=$2 r=$3 h
  while read -r h; do
    local to=${where[$h]:-}
    [ -n "$to" ] || continue             # not a target header (common, ec, system)
    [ "${rank[$to]}" -gt "$r" ] || continue
    if [ -n "${allowed["$f $h"]:-}" ]; then
      used["$f $h"]=1
    else
      echo "$f: includes $h (layer $to over layer $l)"
      bad=1
    fi
  done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
}
for l in "${layers[@]}"; do
  for f in target/"$l"/*.[ch]; do
    [ -e "$f" ] && check "$f" "$l" "${rank[$l]}"
  done
done
# below every layer: common/ and ec/; beside them, nothing of the target's
for f in common/*.[ch] common/*/*.[ch] ec/*.[ch]; do
  [ -e "$f" ] && check "$f" "${f%%/*}" 0
done
for f in target/*.[ch]; do
  [ "$f" = target/main.c ] || { echo "$f: outside every subsystem folder"; bad=1; }
done
for k in "${!allowed[@]}"; do
  [ -n "${used[$k]:-}" ] || { echo "$allow: '$k' matches no upward include: drop it"; bad=1; }
done
exit $bad
