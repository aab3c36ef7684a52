#!/bin/sh
# cli_dynamic_raw_eval: evaluation, recommend and export over raw item ids
# (doc/data.md, "Raw item ids"). data gen --raw-ids K writes the events of
# the dense file with item i as i x K; a dynamic item table trained on
# either is the same model up to that map of ids, once the initial rows
# do not depend on the id: a row is drawn from (seed, table, id), so item
# i and item i x K would start apart, and embedding.init_std = 0 starts
# every row at 0 (the rows then move by their gradients alone, which the
# map leaves unchanged: the sampled negatives are drawn by index in the
# sorted id list). At P = 1, 2 and 4 the raw run's losses, validation and
# test metrics (eval_every and the final evaluation, HR/NDCG/MRR) and the
# most-popular baseline equal the dense run's bit for bit: the candidates
# of a raw dataset are its sorted id list, item number j = the j-th id.
# recommend prints the dense run's items x K with the same scores; export
# writes the raw ids beside the same rows. train.loss = full (its
# candidates: every item of the list) gives the dense run's losses.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
K=1099511627791
G="--users 64 --items 500 --length uniform:5,40 --timestamps"
"$FS" data gen $G -o "$T/dense.h5" >/dev/null 2>"$T/gen.err" &&
    "$FS" data gen $G --raw-ids $K -o "$T/raw.h5" >/dev/null 2>>"$T/gen.err" ||
    { fail "data gen: $(cat "$T/gen.err")"; finish; }
COMMON="device.type=cpu train.epochs=10 train.max_steps=6 train.log_every=1 train.eval_every=1
model.layers=1 model.dim=16 embedding.dynamic=on embedding.init_std=0 train.baseline=on"
run() { # NAME NP DATA ARGS...: metrics in $T/NAME.jsonl, checkpoints in $T/NAME.ck
    rn=$1 rp=$2 rd=$3; shift 3
    "$MPIRUN" -np "$rp" "$FS" train "$IN" $COMMON "data.path=$T/$rd.h5" \
        "output.metrics=$T/$rn.jsonl" "output.checkpoint_dir=$T/$rn.ck" "$@" \
        >"$T/$rn.out" 2>&1 || fail "$rn: $(tail -n 3 "$T/$rn.out")"
}
# the evaluations of a run: split, step and every metric
evals() { grep '"event":"eval"' "$1" | sed 's/"samples_per_s".*"hr@1"/"hr@1"/'; }
for p in 1 2 4; do
    run "dense-$p" $p dense
    run "raw-$p" $p raw
    same_losses "$T/dense-$p.jsonl" "$T/raw-$p.jsonl" "P=$p: raw ids vs dense ids" 0 0
    evals "$T/dense-$p.jsonl" > "$T/ed"; evals "$T/raw-$p.jsonl" > "$T/er"
    if [ "$(wc -l < "$T/ed")" -ge 3 ] && cmp -s "$T/ed" "$T/er"; then
        pass "P=$p: the $(wc -l < "$T/ed") evaluations over raw ids equal the dense ones"
    else
        fail "P=$p: evaluations differ: $(diff "$T/ed" "$T/er" | head -n 3 | tr '\n' ' ')"
    fi
    grep -E '^eval|popular' "$T/dense-$p.out" > "$T/pd"; grep -E '^eval|popular' "$T/raw-$p.out" > "$T/pr"
    grep -q popular "$T/pd" && cmp -s "$T/pd" "$T/pr" && pass "P=$p: the printed evaluations and the popular baseline equal" ||
        fail "P=$p: printed evaluations differ: $(diff "$T/pd" "$T/pr" | head -n 3 | tr '\n' ' ')"
done
grep -q "holds raw item ids" "$T/raw-1.out" && fail "a refusal in the raw run"

# the full softmax over raw ids: every listed item a candidate (P = 2)
run full-dense 2 dense train.loss=full train.final_eval=off train.eval_every=0
run full-raw 2 raw train.loss=full train.final_eval=off train.eval_every=0
same_losses "$T/full-dense.jsonl" "$T/full-raw.jsonl" "train.loss = full, P=2: raw ids vs dense ids" 0 0

# recommend (P = 2) from the P = 1 checkpoints: the dense run's items x K
for d in dense raw; do
    "$MPIRUN" -np 2 "$FS" recommend "$T/$d-1.ck/ckpt-6.h5" --top 5 -o "$T/rec-$d.csv" \
        >"$T/rec-$d.out" 2>&1 || fail "recommend $d: $(tail -n 3 "$T/rec-$d.out")"
done
awk -F, -v K=$K 'NR > 1 { printf "%s,%s,%.0f,%s\n", $1, $2, $3 * K, $4; next } { print }' \
    "$T/rec-dense.csv" > "$T/rec-mapped.csv"
[ "$(wc -l < "$T/rec-raw.csv")" -gt 64 ] && cmp -s "$T/rec-mapped.csv" "$T/rec-raw.csv" &&
    pass "recommend over raw ids: the dense run's items x K, the same scores" ||
    fail "recommend over raw ids: $(diff "$T/rec-mapped.csv" "$T/rec-raw.csv" | head -n 3 | tr '\n' ' ')"

# export (P = 2): the raw ids beside the same rows
for d in dense raw; do
    "$MPIRUN" -np 2 "$FS" export "$T/$d-1.ck/ckpt-6.h5" -o "$T/ex-$d.h5" \
        >"$T/ex-$d.out" 2>&1 || fail "export $d: $(tail -n 3 "$T/ex-$d.out")"
done
if have_h5py; then
    if "$PY" - "$T/ex-dense.h5" "$T/ex-raw.h5" "$K" <<'EOF'; then pass "export over raw ids: /item_map the raw ids, the dense run's rows"; else fail "export over raw ids"; fi
import sys, h5py, numpy as np
d, r, K = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), int(sys.argv[3])
assert np.array_equal(r["item_map"][:], np.arange(1, 501) * K), r["item_map"][:4]
assert np.array_equal(d["item_map"][:], np.arange(1, 501))
for k in ["item_embeddings", "user_embeddings"]:
    assert np.array_equal(d[k][:], r[k][:]), k
assert np.abs(r["item_embeddings"][:]).max() > 0
EOF
fi
finish
