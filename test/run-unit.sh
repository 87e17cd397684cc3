#!/usr/bin/env bash
# Run every unit test binary in BUILD/test, or only those named after it
# (test_vmap, or vmap); print one total line. The tests run from the
# repository root, where they find their data (test/data/).
#   test/run-unit.sh build              every unit test
#   test/run-unit.sh build test_vmap    one
set -u
build=$(realpath -m "${1:-build}")
shift $(( $# > 0 ? 1 : 0 ))
cd "$(dirname "$0")/.."
want=()
for n in "$@"; do
  n=${n%.c}; n=${n#test_}
  [ -x "$build/test/test_$n" ] || { echo "run-unit.sh: no unit test test_$n in $build/test" >&2; exit 2; }
  want+=("$build/test/test_$n")
done
[ ${#want[@]} -gt 0 ] || want=("$build"/test/test_*)
pass=0 fail=0 bad=0
for t in "${want[@]}"; do
  [ -x "$t" ] || continue
  out=$("$t" 2>&1)
  rc=$?
  echo "$out"
  line=$(echo "$out" | grep -E '^test_[a-z0-9_]+: [0-9]+ passed, [0-9]+ failed$' | tail -1)
  if [ -z "$line" ]; then
    echo "$t: crashed or printed no summary (exit $rc)"
    bad=$((bad + 1))
    continue
  fi
  p=$(echo "$line" | sed -E 's/.*: ([0-9]+) passed.*/\1/')
  f=$(echo "$line" | sed -E 's/.* ([0-9]+) failed$/\1/')
  pass=$((pass + p)); fail=$((fail + f))
  [ $rc -eq 0 ] || [ "$f" -gt 0 ] || bad=$((bad + 1))
done
fail=$((fail + bad))
echo "unit: $pass passed, $fail failed"
[ $fail -eq 0 ]
