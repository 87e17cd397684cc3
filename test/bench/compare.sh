#!/usr/bin/env bash
# compare.sh OLD [NEW] [SCRIPT] [ROUNDS]: the same benchmark against two
# builds, in one sitting.
#
# OLD (a commit, tag or branch) is checked out into a worktree under /tmp
# and built there with its own Makefile; so is NEW when given ("." or
# nothing: this working tree, built in build/). Then SCRIPT (default
# warm_get.sh) runs ROUNDS times (default 2) for each, alternating OLD,
# NEW, OLD, ... so that both meet the same machine. Each side runs its own
# copy of the script, so a row that only one of them has appears in one
# table only; with COMPARE_SAME_SCRIPT=1 this tree's copy of SCRIPT runs
# against both builds (for a row the older script lacks; the script must
# then only use what both builds have). The tables are printed as they
# come, each headed by the build that made it; compare ratios row by row.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
old=${1:?usage: compare.sh OLD [NEW] [SCRIPT] [ROUNDS]}
new=${2:-.}
script=${3:-warm_get.sh}
rounds=${4:-2}
[[ "$rounds" =~ ^[0-9]+$ ]] && [ "$rounds" -ge 1 ] && [ "$rounds" -le 10 ] ||
  { echo "compare.sh: ROUNDS must be 1..10" >&2; exit 2; }
[ -f "$here/test/bench/$script" ] || { echo "compare.sh: no test/bench/$script" >&2; exit 2; }

# checkout REV -> prints the directory of a built worktree of REV
checkout() {
  local sha wt
  sha=$(git -C "$here" rev-parse --verify "$1^{commit}")
  wt=/tmp/shoal-ref-${sha:0:12}
  if [ ! -x "$wt/build/bin/shoal-proxy" ]; then
    rm -rf "$wt"
    git -C "$here" worktree prune
    git -C "$here" worktree add --detach "$wt" "$sha" >/dev/null
    # dependencies are this tree's (make test/run installed them)
    touch "$wt/.deps-ok"
    make -C "$wt" -s -j2 all >/dev/null
  fi
  [ -f "$wt/test/bench/$script" ] || { echo "compare.sh: $1 has no test/bench/$script" >&2; exit 2; }
  echo "$wt"
}
a=$(checkout "$old")
run_a="$a/test/bench/$script"
if [ "${COMPARE_SAME_SCRIPT:-0}" = 1 ]; then
  run_a="$a/test/bench/compare-$script"
  cp "$here/test/bench/$script" "$run_a"
fi
if [ "$new" = . ]; then
  make -C "$here" -s -j2 all >/dev/null
  b=$here
else
  b=$(checkout "$new")
fi
for i in $(seq "$rounds"); do
  echo "######## round $i: $old ($(git -C "$a" rev-parse --short HEAD))"
  bash "$run_a"
  echo "######## round $i: $new ($(git -C "$b" rev-parse --short HEAD))"
  bash "$b/test/bench/$script"
done
