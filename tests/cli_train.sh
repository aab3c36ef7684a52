#!/bin/sh
# cli_train: 'freescale train' end to end on tiny data: the same losses on
# 1, 2 and 4 ranks (and with embedding replicas), resume equal to an
# uninterrupted run (also on another rank count), the metrics file's keys,
# and the refusals of bad inputs before training starts.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 model.dropout=0 train.epochs=10 train.log_every=1"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

for model in hstu sasrec; do
    loss=softmax; [ $model = sasrec ] && loss=bce
    M="model.type=$model train.loss=$loss train.max_steps=10"
    expect_ok train 1 $M output.metrics="$T/$model-1.jsonl"
    expect_ok train 2 $M output.metrics="$T/$model-2.jsonl"
    expect_ok train 4 $M output.metrics="$T/$model-4.jsonl"
    expect_ok train 4 $M parallel.embedding_group=2 output.metrics="$T/$model-4g2.jsonl"
    same_losses "$T/$model-1.jsonl" "$T/$model-2.jsonl" "$model P=1 vs P=2"
    same_losses "$T/$model-1.jsonl" "$T/$model-4.jsonl" "$model P=1 vs P=4"
    same_losses "$T/$model-1.jsonl" "$T/$model-4g2.jsonl" "$model P=1 vs P=4, embedding_group=2"
done

# the balance mode changes which rank trains on what, never the losses
B="train.max_steps=10"
expect_ok train 2 $B parallel.balance=none output.metrics="$T/b-none.jsonl"
expect_ok train 4 $B parallel.balance=lpt output.metrics="$T/b-lpt.jsonl"
expect_ok train 4 $B parallel.balance=kk parallel.balance_equal_count=on output.metrics="$T/b-kk.jsonl"
expect_ok train 2 $B parallel.balance_adapt=on debug.slow_rank=1:2 output.metrics="$T/b-adapt.jsonl" \
    output.trace="$T/trace.json" output.trace_steps=5
same_losses "$T/hstu-1.jsonl" "$T/b-none.jsonl" "balance none at P=2"
same_losses "$T/hstu-1.jsonl" "$T/b-lpt.jsonl" "balance lpt at P=4"
same_losses "$T/hstu-1.jsonl" "$T/b-kk.jsonl" "balance kk with equal counts at P=4"
same_losses "$T/hstu-1.jsonl" "$T/b-adapt.jsonl" "balance_adapt with a slow rank at P=2"
for key in '"bubble":' '"imbalance":' '"forward_ms":' '"wait_ms":'; do
    grep -qF "$key" "$T/b-kk.jsonl" || fail "metrics lack $key"
done
# the trace is trace-event JSON with one track per rank
if have_h5py; then
    "$PY" - "$T/trace.json" <<'PYEOF' && pass "trace is valid trace-event JSON" || fail "trace invalid"
import json, sys
d = json.load(open(sys.argv[1]))
ev = d["traceEvents"]
x = [e for e in ev if e["ph"] == "X"]
assert {e["tid"] for e in x} == {0, 1}, "one track per rank"
assert all(e["dur"] >= 0 and e["ts"] >= 0 for e in x)
assert {e["name"] for e in x} >= {"read", "forward", "backward", "allreduce"}
PYEOF
fi
expect_error "debug.slow_rank = '5:2': rank 5 does not exist" train 2 $B debug.slow_rank=5:2
expect_error "expected one of none|lpt|kk" train 1 $B parallel.balance=best

# the metrics file's contract
f="$T/hstu-2.jsonl"
for key in '"event":"train"' '"event":"eval"' '"event":"summary"' '"split":"test"' \
    '"split":"val"' '"samples_per_s":' '"tokens_per_s":' '"hr@10":' '"ndcg@10":' '"hr@50":' \
    '"ndcg@50":' '"hr@200":' '"ndcg@200":' '"mrr":' '"epoch":' '"step":' '"loss":'; do
    grep -qF "$key" "$f" || fail "metrics file lacks $key"
done
if have_h5py; then
    "$PY" -c "import json,sys; [json.loads(l) for l in open('$f')]" || fail "metrics not JSON lines"
fi

# resume: 5 steps + checkpoint + 5 steps == 10 straight steps (P = 2), and
# a P = 2 checkpoint resumed on P = 3
mkdir -p "$T/ck"
expect_ok train 2 train.max_steps=5 output.checkpoint_dir="$T/ck" output.metrics="$T/r1.jsonl"
[ -f "$T/ck/ckpt-5.h5" ] || fail "no checkpoint ckpt-5.h5"
ls "$T/ck" | grep -q tmp && fail "temporary checkpoint left behind"
expect_ok train 2 train.max_steps=10 train.resume="$T/ck/ckpt-5.h5" output.metrics="$T/r2.jsonl"
expect_ok train 3 train.max_steps=10 train.resume="$T/ck/ckpt-5.h5" output.metrics="$T/r3.jsonl"
same_losses "$T/hstu-2.jsonl" "$T/r2.jsonl" "resume at P=2 vs straight" 5
same_losses "$T/hstu-2.jsonl" "$T/r3.jsonl" "P=2 checkpoint resumed at P=3 vs straight" 5

# bad inputs, refused before training
expect_error "cannot open dataset" train 2 data.path="$T/none.h5"
error_once 2 "cannot open dataset" train "$IN" data.path="$T/none.h5"
error_once 3 "train: unknown option '--bogus'" train "$IN" --bogus
error_once 2 "data.max_seq_len = '0': out of range" train "$IN" data.max_seq_len=0
expect_error "data.max_seq_len = '0': out of range" train 1 data.max_seq_len=0
expect_error "train.resume = $T/none.h5: No such file" train 1 train.resume="$T/none.h5"
head -c 4000 "$T/ck/ckpt-5.h5" > "$T/cut.h5"
expect_error "train.resume = $T/cut.h5: not a readable HDF5 file" train 1 train.resume="$T/cut.h5"
expect_error "output.metrics = $T/no/dir/m.jsonl: cannot open" train 1 train.max_steps=1 \
    output.metrics="$T/no/dir/m.jsonl"
"$FS" data gen --users 64 --items 300 --length uniform:5,40 --timestamps -o "$T/tiny300.h5" >/dev/null
expect_ok train 1 model.dim=24 train.max_steps=2 output.checkpoint_dir="$T/ck24"
expect_error "model.dim = 24 in the checkpoint, 16 in this run" \
    train 1 train.resume="$T/ck24/ckpt-2.h5"
expect_error "num_items of the dataset = 200 in the checkpoint, 300 in this run" \
    train 1 data.path="$T/tiny300.h5" train.resume="$T/ck/ckpt-5.h5"
finish
