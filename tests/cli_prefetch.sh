#!/bin/sh
# cli_prefetch: parallel.overlap = prefetch (doc/overlap.md) gives losses
# identical (cmp of the step/loss listings) to overlap = none: HSTU and
# SASRec at P = 1, 2, 3, 4 on data whose next-step rows partly collide
# with this step's update; with embedding groups (P = 4, embedding_group =
# 2), balance = kk and lpt, rows_codec = bf16, split_long = auto; on a
# vocabulary so small that every next-step row collides; across a
# checkpoint written under prefetch and resumed at another rank count
# (prefetch vs none from it; the uninterrupted run to 1e-5). The
# runs really prefetched (rows_prefetched > 0, rows_late > 0 where rows
# collide, collision in [0, 1]) and the trace has the prefetch slices.
# (tests/test_emb_prefetch: the exchange itself, every case, bitwise.)
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 96 --items 3000 --length pareto:8,1.2 --max-length 120 --timestamps \
    -o "$T/mid.h5" >/dev/null || { fail "data gen"; finish; }
tiny_data
COMMON="data.path=$T/mid.h5 data.max_seq_len=128 device.type=cpu train.epochs=10 train.max_steps=8
train.log_every=1 train.eval_every=0 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
# identical NAME A B [FROM]: the step/loss listings of A and B (steps > FROM) are identical
identical() {
    losses "$2" "${4:-0}" > "$T/la"; losses "$3" "${4:-0}" > "$T/lb"
    if [ -s "$T/la" ] && cmp -s "$T/la" "$T/lb"; then pass "$1: losses identical ($(wc -l < "$T/la") steps)"
    else fail "$1: losses differ: $(diff "$T/la" "$T/lb" | head -n 3 | tr '\n' ' ')"; fi
}
# prefetched NAME METRICS [all]: rows came ahead and late (all: none ahead)
prefetched() {
    a=$(grep -o '"rows_prefetched":[0-9.e+]*' "$2" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
    l=$(grep -o '"rows_late":[0-9.e+]*' "$2" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
    c=$(grep -o '"collision":[0-9.e+-]*' "$2" | cut -d: -f2 | awk '$1 < 0 || $1 > 1 { bad = 1 } END { print bad + 0 }')
    if awk -v a="$a" -v l="$l" -v w="${3:-}" -v c="$c" 'BEGIN { exit !(c == 0 && l > 0 && (w == "all" ? a == 0 : a > 0)) }'; then
        pass "$1: $a rows ahead, $l late (summed over the progress lines)"
    else
        fail "$1: rows_prefetched $a, rows_late $l, collision out of [0, 1]: $c"
    fi
}
run_pair() { # NAME NP ARGS...: none vs prefetch
    name=$1; np=$2; shift 2
    expect_ok train $np "$@" parallel.overlap=none output.metrics="$T/n.jsonl"
    expect_ok train $np "$@" parallel.overlap=prefetch output.metrics="$T/p.jsonl"
    identical "$name" "$T/n.jsonl" "$T/p.jsonl"
    prefetched "$name" "$T/p.jsonl"
    # the gradient bytes per step are none's (counted per backward, not per
    # lookup: a prefetched lookup is counted a step before its gradients)
    gn=$(grep -o '"grads_bytes":[0-9.e+]*' "$T/n.jsonl" | tr '\n' ' ')
    gp=$(grep -o '"grads_bytes":[0-9.e+]*' "$T/p.jsonl" | tr '\n' ' ')
    [ -n "$gn" ] && [ "$gn" = "$gp" ] && pass "$name: grads_bytes per step as none's" ||
        fail "$name: grads_bytes: none $gn, prefetch $gp"
}
for np in 1 2 3 4; do
    run_pair "HSTU P=$np" $np model.type=hstu
    run_pair "SASRec P=$np" $np model.type=sasrec train.loss=bce
done
run_pair "P=4, embedding_group=2, kk, bf16 rows" 4 parallel.embedding_group=2 parallel.balance=kk \
    parallel.rows_codec=bf16
run_pair "SASRec P=3, lpt, bf16 rows and gradients" 3 model.type=sasrec parallel.balance=lpt \
    parallel.rows_codec=bf16 parallel.grads_codec=bf16
run_pair "P=3, split_long=auto" 3 parallel.split_long=auto debug.split_chunks=2 model.layers=2
run_pair "SASRec P=2, split_long=auto" 2 model.type=sasrec parallel.split_long=auto \
    debug.split_chunks=2
# every next-step row collides (200 items, 16 negatives a position)
expect_ok train 2 data.path=$T/tiny.h5 parallel.overlap=none output.metrics="$T/tn.jsonl"
expect_ok train 2 data.path=$T/tiny.h5 parallel.overlap=prefetch output.metrics="$T/tp.jsonl" \
    output.trace="$T/trace.json"
identical "every row collides" "$T/tn.jsonl" "$T/tp.jsonl"
prefetched "every row collides" "$T/tp.jsonl" all
sed -n 's/.*"collision":\([^,]*\),"rows_prefetched":[^,]*,"rows_late":\([^,]*\).*/\1 \2/p' "$T/tp.jsonl" |
    awk '$2 > 0 && $1 != 1 { bad = 1 } END { exit bad }' &&
    pass "tiny vocabulary: collision 1 on every line with rows" || fail "tiny vocabulary: collision below 1"
for s in '"name":"prefetch"' '"name":"late_fetch"'; do
    grep -qF "$s" "$T/trace.json" && pass "trace has $s" || fail "trace lacks $s"
done
grep -q 'prefetch [0-9]* rows/step late [0-9]* (collision' "$T/out" &&
    pass "progress line reports the prefetch" || fail "no prefetch on the progress line"
# a checkpoint written under prefetch at P = 2, resumed at P = 3 under prefetch
expect_ok train 2 parallel.overlap=none output.metrics="$T/r-none.jsonl"
expect_ok train 2 parallel.overlap=prefetch train.checkpoint_every=4 \
    output.checkpoint_dir="$T/ck" output.metrics="$T/r-pf.jsonl"
identical "checkpointing under prefetch" "$T/r-none.jsonl" "$T/r-pf.jsonl"
for ov in none prefetch; do
    expect_ok train 3 parallel.overlap=$ov train.resume="$T/ck/ckpt-4.h5" \
        output.metrics="$T/r-$ov-3.jsonl"
done
identical "resumed at P=3: prefetch vs none" "$T/r-none-3.jsonl" "$T/r-prefetch-3.jsonl"
same_losses "$T/r-none.jsonl" "$T/r-prefetch-3.jsonl" "resumed at P=3 vs uninterrupted at P=2" 4 1e-5
finish
