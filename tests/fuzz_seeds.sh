#!/bin/sh
# fuzz_seeds: every seed of the fuzz corpus (tests/fuzz/seeds/READER/, with
# the inputs that once failed kept there as regression cases) through its
# reader once, unmutated: each one a correct acceptance or a clean refusal
# naming the file (tests/fuzz/fuzz_readers.c). .ci/run adds the bounded
# mutational run under the sanitizers.
. "$(dirname "$0")/lib.sh"
DRIVER=$(dirname "$FS")/tests/fuzz/fuzz_readers
[ -x "$DRIVER" ] || { echo "SKIP: $DRIVER not built"; exit 77; }
for r in params csv jsonl dataset checkpoint; do
    if "$DRIVER" $r "$TOP_SRCDIR/tests/fuzz/seeds/$r" 0 "$T/failed" >"$T/out" 2>"$T/err"; then
        pass "$(cat "$T/out")"
    else
        fail "$r: $(cat "$T/out" "$T/err" | head -c 1500)"
    fi
done
finish
