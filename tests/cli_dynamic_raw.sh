#!/bin/sh
# cli_dynamic_raw: a dataset of raw item ids (data gen --raw-ids K: the
# same events as a dense file, item i written as i x K with K a large odd
# number) trains on a dynamic item table, HSTU and SASRec at P = 1, 2 and
# 4, with sampled negatives drawn from the dataset's id list. The losses at
# P = 2 and 4 agree with P = 1 to 1e-6 relative (the dense gradients'
# all-reduce sums in another order, as for any table; on a dense file the
# dynamic table is bitwise the dense one at each P: cli_dynamic.sh), and a
# run repeats bit for bit. Refused by name: a raw dataset without
# embedding.dynamic. Evaluation, recommend and export over raw ids:
# cli_dynamic_raw_eval.sh; ranking, item features and score:
# cli_dynamic_raw_rank.sh.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
K=1099511627791
"$FS" data gen --users 64 --items 500 --length uniform:5,40 --timestamps --raw-ids $K \
    -o "$T/raw.h5" >/dev/null 2>"$T/gen.err" || { fail "data gen --raw-ids: $(cat "$T/gen.err")"; finish; }
COMMON="data.path=$T/raw.h5 device.type=cpu train.epochs=10 train.max_steps=6 train.log_every=1
train.eval_every=0 train.final_eval=off model.layers=1 model.dim=16 embedding.dynamic=on"
run() { # NAME NP ARGS...: metrics in $T/NAME.jsonl
    rn=$1 rp=$2; shift 2
    "$MPIRUN" -np "$rp" "$FS" train "$IN" $COMMON "output.metrics=$T/$rn.jsonl" "$@" \
        >"$T/$rn.out" 2>&1 || fail "$rn: $(tail -n 3 "$T/$rn.out")"
}
for m in hstu sasrec; do
    for p in 1 2 4; do run "$m-$p" $p model.type=$m; done
    same_losses "$T/$m-1.jsonl" "$T/$m-2.jsonl" "$m raw ids: P=2 vs P=1" 0 1e-6
    same_losses "$T/$m-1.jsonl" "$T/$m-4.jsonl" "$m raw ids: P=4 vs P=1" 0 1e-6
done
# a second run at P = 2 repeats the first bit for bit
run hstu-2b 2 model.type=hstu
losses "$T/hstu-2.jsonl" > "$T/la"; losses "$T/hstu-2b.jsonl" > "$T/lb"
[ -s "$T/la" ] && cmp -s "$T/la" "$T/lb" && pass "raw ids at P=2: a second run identical" ||
    fail "raw ids at P=2: a second run differs: $(diff "$T/la" "$T/lb" | head -n 3 | tr '\n' ' ')"
grep -q 'items.rows' "$T/hstu-2.jsonl" && pass "the dynamic table's counters in the metrics" ||
    fail "no items.rows in the metrics"
# the raw ids reach the table: its rows are the ids looked up, not 1 .. 500
losses "$T/hstu-1.jsonl" | tail -n 1 > "$T/last"
awk '{ ok = $2 > 0 && $2 < 50 } END { exit !(NR == 1 && ok) }' "$T/last" && pass "trains: last loss $(cut -d' ' -f2 "$T/last")" ||
    fail "last loss: $(cat "$T/last")"

expect_error "set embedding.dynamic = on" "$FS" train "$IN" data.path="$T/raw.h5" \
    train.final_eval=off train.eval_every=0 train.max_steps=2
expect_error "set embedding.dynamic = on" "$FS" params "$IN" data.path="$T/raw.h5"
expect_ok "$FS" params "$IN" data.path="$T/raw.h5" embedding.dynamic=on
finish
