#!/usr/bin/env bash
# sizes.sh: fail when a source file or a function has grown past its bound.
#
#   test/lint/sizes.sh [DIR...]     (default: common proxy target loader ec)
#
# Every .c and .h under the folders is checked: a file over MAX_FILE_LINES
# lines (1000) or a function over MAX_FUNC_LINES lines (100) is listed, one
# offender a line ("path: N lines" or "path:LINE: name(): N lines"), and
# the exit status is 1; 0 when there is none.
#
# Functions are found by this codebase's layout: a definition's signature
# starts at column 0 and its body opens with '{' alone at column 0 (or,
# tolerated, "...) {" ending the signature's last line at column 0) and
# closes with '}' at column 0. A function's length counts its body from
# the opening '{' to the closing '}', both included. An opening '{' at
# column 0 inside a body that never closed is reported on stderr and the
# count starts again from it, so a stray brace cannot hide a function.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
MAX_FILE_LINES=${MAX_FILE_LINES:-1000}
MAX_FUNC_LINES=${MAX_FUNC_LINES:-100}
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=(common proxy target loader ec)
existing=()
for d in "${dirs[@]}"; do
  [ -d "$d" ] && existing+=("$d")
done
[ ${#existing[@]} -gt 0 ] || { echo "sizes.sh: none of ${dirs[*]} exists" >&2; exit 2; }

mapfile -t files < <(find "${existing[@]}" -type f \( -name '*.c' -o -name '*.h' \) | LC_ALL=C sort)
[ ${#files[@]} -gt 0 ] || exit 0

awk -v maxfile="$MAX_FILE_LINES" -v maxfn="$MAX_FUNC_LINES" '
function finish_file() {
    if (file == "")
        return
    if (infn)
        printf "%s:%d: %s(): no closing brace at column 0\n", file, start, fname > "/dev/stderr"
    if (lines > maxfile) {
        printf "%s: %d lines (over %d)\n", file, lines, maxfile
        bad++
    }
}
# The identifier right before the first "(" of a signature line.
function name_of(s,    i) {
    i = index(s, "(")
    if (i == 0)
        return "?"
    s = substr(s, 1, i - 1)
    sub(/[ \t]+$/, "", s)
    if (match(s, /[A-Za-z_][A-Za-z_0-9]*$/))
        return substr(s, RSTART, RLENGTH)
    return "?"
}
function open_body(line_no) {
    if (infn)
        printf "%s:%d: %s(): a new body opens before this one closed\n", file, start,
               fname > "/dev/stderr"
    infn = 1
    start = line_no
    fname = sig
}
FNR == 1 {
    finish_file()
    file = FILENAME
    lines = 0
    infn = 0
    sig = "?"
}
{
    lines = FNR
    if ($0 ~ /^[A-Za-z_]/ && index($0, "(") > 0)
        sig = name_of($0)
    if ($0 ~ /^\{/) {
        open_body(FNR)
    } else if ($0 ~ /^[A-Za-z_].*\)[ \t]*\{[ \t]*$/ && $0 !~ /=/) {
        open_body(FNR)
    } else if (infn && $0 ~ /^\}/) {
        n = FNR - start + 1
        if (n > maxfn) {
            printf "%s:%d: %s(): %d lines (over %d)\n", file, start, fname, n, maxfn
            bad++
        }
        infn = 0
    }
}
END {
    finish_file()
    exit bad > 0 ? 1 : 0
}
' "${files[@]}"
