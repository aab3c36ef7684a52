#!/bin/sh
# cli_split: parallel.split_long (context-parallel HSTU and SASRec,
# doc/balance.md):
# the losses of runs whose long sequences are cut into chunks on several
# ranks equal those of the unsplit runs to 1e-5, at P = 2, 3 and 4 with
# dropout and the time bias, without timestamps, with every sequence
# forced into 2 and into 3 chunks (debug.split_chunks), and through a
# checkpoint resume at another rank count, and for SASRec (BCE and softmax
# losses, forced 3 chunks); the runs really cut (metrics
# split_sequences, kv_bytes); bad settings are refused before training.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 96 --items 300 --length pareto:20,1.1 --max-length 500 --timestamps \
    -o "$T/long.h5" \
    >/dev/null || { fail "data gen"; finish; }
COMMON="data.path=$T/long.h5 data.max_seq_len=512 device.type=cpu model.layers=2 model.heads=2
train.epochs=10 train.max_steps=6 train.log_every=1 train.eval_every=0 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
cut_some() { # METRICS NAME: the run cut sequences and sent keys/values
    n=$(grep -o '"split_sequences":[0-9]*' "$1" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
    b=$(grep -o '"kv_bytes":[0-9.e+]*' "$1" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
    if [ "$n" -gt 0 ] && awk -v b="$b" 'BEGIN { exit !(b > 0) }'; then
        pass "$2: $n sequences cut, keys/values sent"
    else
        fail "$2: nothing was cut (split_sequences $n, kv_bytes $b)"
    fi
}

for np in 2 3 4; do
    expect_ok train $np output.metrics="$T/off-$np.jsonl"
    expect_ok train $np parallel.split_long=auto output.metrics="$T/auto-$np.jsonl"
    same_losses "$T/off-$np.jsonl" "$T/auto-$np.jsonl" "P=$np: split_long=auto vs off" 0 1e-5
    cut_some "$T/auto-$np.jsonl" "P=$np auto"
done
cat "$T/out" "$T/err" | grep -q 'split_long: [0-9]* sequences* cut into' && pass "progress lines report the cuts" ||
    fail "no split_long progress line"
# every sequence cut, whatever its cost (chunks of a few positions, several
# chunks of one sequence on one rank)
for k in 2 3; do
    expect_ok train 2 parallel.split_long=auto debug.split_chunks=$k output.metrics="$T/k$k.jsonl"
    same_losses "$T/off-2.jsonl" "$T/k$k.jsonl" "every sequence into $k chunks" 0 1e-5
done
expect_ok train 3 parallel.split_long=auto debug.split_chunks=3 output.metrics="$T/k3-3.jsonl"
same_losses "$T/off-3.jsonl" "$T/k3-3.jsonl" "P=3: every sequence into 3 chunks" 0 1e-5
# without timestamps, without dropout, and with the other overlap modes
expect_ok train 2 data.timestamps=off model.dropout=0 output.metrics="$T/nots-off.jsonl"
expect_ok train 2 data.timestamps=off model.dropout=0 parallel.split_long=auto \
    debug.split_chunks=2 output.metrics="$T/nots-auto.jsonl"
same_losses "$T/nots-off.jsonl" "$T/nots-auto.jsonl" "no timestamps, no dropout" 0 1e-5
for ov in none pipeline; do
    expect_ok train 2 parallel.split_long=auto parallel.overlap=$ov output.metrics="$T/ov-$ov.jsonl"
    same_losses "$T/off-2.jsonl" "$T/ov-$ov.jsonl" "overlap=$ov with splitting" 0 1e-5
done
expect_ok train 2 parallel.split_long=auto parallel.progress=thread output.metrics="$T/thr.jsonl"
same_losses "$T/off-2.jsonl" "$T/thr.jsonl" "progress=thread with splitting" 0 1e-5
# a checkpoint of a split run, resumed at another rank count
expect_ok train 2 parallel.split_long=auto train.checkpoint_every=3 output.checkpoint_dir="$T/ck"
expect_ok train 3 parallel.split_long=auto train.resume="$T/ck/ckpt-3.h5" \
    output.metrics="$T/resumed.jsonl"
same_losses "$T/off-3.jsonl" "$T/resumed.jsonl" "resumed at P=3 from a split run at P=2" 3 1e-5

# SASRec: the softmax over the own keys, the earlier keys' merged in
for loss in bce softmax; do
    S="model.type=sasrec train.loss=$loss"
    expect_ok train 2 $S output.metrics="$T/s-off-$loss.jsonl"
    expect_ok train 2 $S parallel.split_long=auto output.metrics="$T/s-auto-$loss.jsonl"
    same_losses "$T/s-off-$loss.jsonl" "$T/s-auto-$loss.jsonl" "SASRec ($loss): auto vs off" 0 1e-5
    cut_some "$T/s-auto-$loss.jsonl" "SASRec ($loss) auto"
done
expect_ok train 3 model.type=sasrec train.loss=bce output.metrics="$T/s-off-3.jsonl"
expect_ok train 3 model.type=sasrec train.loss=bce parallel.split_long=auto debug.split_chunks=3 \
    output.metrics="$T/s-k3.jsonl"
same_losses "$T/s-off-3.jsonl" "$T/s-k3.jsonl" "SASRec P=3: every sequence into 3 chunks" 0 1e-5

# refused before training
B="parallel.split_long=auto output.metrics=$T/bad.jsonl output.checkpoint_dir=$T/badck"
expect_error "parallel.split_threshold" train 2 $B parallel.split_threshold=100
expect_error "debug.split_chunks = 1" train 2 $B debug.split_chunks=1
expect_error "debug.split_chunks = '65': out of range [0, 64]" train 2 $B debug.split_chunks=65
expect_error "parallel.split_kv_cost" train 2 $B parallel.split_kv_cost=lots
expect_error "parallel.split_kv_cost" train 2 $B parallel.split_kv_cost=-1
expect_error "parallel.split_fraction" train 2 $B parallel.split_fraction=0
expect_error "parallel.split_long" train 2 $B parallel.split_long=on
no_file "$T/bad.jsonl"
[ -e "$T/badck" ] && fail "a refused run made $T/badck" || pass "no checkpoint directory made"
finish
