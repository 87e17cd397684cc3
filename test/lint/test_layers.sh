#!/usr/bin/env bash
# test_layers.sh: layers.sh has teeth. On a copy of the sources it must
# pass as they are, and fail on an include planted in a lower layer, on
# an allow-list entry that matches nothing, on a target file outside
# every subsystem folder, and on common/ including a target header.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fresh() {
  rm -rf "$tmp/r"
  mkdir -p "$tmp/r/test/lint"
  cp -r "$here/target" "$here/common" "$here/ec" "$here/Makefile" "$tmp/r/"
  cp "$here/test/lint/layers.allow" "$tmp/r/test/lint/"
}
expect() { # WANT(0|1) WHAT [PATTERN]
  local out rc=0
  out=$("$here/test/lint/layers.sh" "$tmp/r" 2>&1) || rc=$?
  if [ "$rc" != "$1" ] || { [ -n "${3:-}" ] && ! grep -q -- "$3" <<<"$out"; }; then
    echo "test_layers: $2: exit $rc, wanted $1${3:+ and '$3'}:"; echo "$out"; exit 1
  fi
}
fresh; expect 0 "the sources as they are"
fresh; sed -i '0,/^#include "/s//#include "get.h"\n#include "/' "$tmp/r/target/store/store.c"
expect 1 "store including the read handler's header" "store.c: includes get.h (layer api over layer store)"
fresh; echo 'target/store/store.c vmap.h  downward: never needed' >> "$tmp/r/test/lint/layers.allow"
expect 1 "an allow-list entry matching nothing" "matches no upward include"
fresh; echo 'int stray;' > "$tmp/r/target/stray.c"
expect 1 "a file outside the subsystem folders" "stray.c: outside every subsystem folder"
fresh; sed -i '0,/^#include "/s//#include "store.h"\n#include "/' "$tmp/r/common/util.c"
expect 1 "common including a target header" "util.c: includes store.h"
echo "test_layers: 5 passed, 0 failed"
