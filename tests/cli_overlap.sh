#!/bin/sh
# cli_overlap: parallel.overlap = none | pipeline | prioritized give the same
# losses (20 steps of tiny.in at P = 2 and 4, HSTU and SASRec, with dropout
# and with embedding replicas): identical to the 9 digits the metrics print
# where the reductions keep their order, else to 1e-5. A pipelined run that
# evaluates between epochs, checkpoints and resumes matches too; the
# overlap metrics are written; transports other than mpi are refused; the
# progress thread gives the same losses and survives evaluation.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
# the CPU backend (tests/cuda_train.sh covers the modes on a GPU)
COMMON="data.path=$T/tiny.h5 device.type=cpu train.epochs=10 train.max_steps=20 train.log_every=1"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

for np in 2 4; do
    for model in hstu sasrec; do
        loss=softmax; [ $model = sasrec ] && loss=bce
        M="model.type=$model train.loss=$loss"
        for ov in none pipeline prioritized; do
            expect_ok train $np $M parallel.overlap=$ov output.metrics="$T/$model-$np-$ov.jsonl"
        done
        for ov in pipeline prioritized; do
            same_losses "$T/$model-$np-none.jsonl" "$T/$model-$np-$ov.jsonl" \
                "$model P=$np: overlap=$ov vs none, to the printed digits" 0 0
        done
    done
    expect_ok train $np parallel.overlap=none model.dropout=0 output.metrics="$T/nd-$np-none.jsonl"
    expect_ok train $np parallel.overlap=prioritized model.dropout=0 output.metrics="$T/nd-$np-pr.jsonl"
    same_losses "$T/nd-$np-none.jsonl" "$T/nd-$np-pr.jsonl" "no dropout P=$np: prioritized vs none" 0 1e-5
done
# parallel.progress = thread: the same losses, and evaluations between
# epochs and at the end complete (the between-layers hook stays out of
# evaluation: it once deadlocked on the progress thread's lock there)
expect_ok train 2 parallel.progress=thread train.eval_every=1 output.metrics="$T/thread.jsonl"
same_losses "$T/hstu-2-prioritized.jsonl" "$T/thread.jsonl" "progress=thread with evaluation" 0 0
grep -q '^eval test' "$T/out" && pass "progress=thread: final evaluation ran" ||
    fail "progress=thread: no final evaluation"
# a run shorter than output.trace_steps still writes its trace
expect_ok train 2 train.max_steps=3 output.trace="$T/short-trace.json"
[ -s "$T/short-trace.json" ] && pass "trace of a 3-step run written" || fail "no trace of a short run"
expect_ok train 4 parallel.embedding_group=2 parallel.overlap=none output.metrics="$T/g2-none.jsonl"
expect_ok train 4 parallel.embedding_group=2 parallel.overlap=prioritized output.metrics="$T/g2-pr.jsonl"
same_losses "$T/g2-none.jsonl" "$T/g2-pr.jsonl" "P=4, embedding_group=2: prioritized vs none" 0 1e-5

# a pipeline crossing epochs with evaluation, checkpoints and a resume
E="train.eval_every=1 train.checkpoint_every=6"
expect_ok train 2 $E parallel.overlap=none output.metrics="$T/e-none.jsonl"
expect_ok train 2 $E parallel.overlap=pipeline output.metrics="$T/e-pipe.jsonl" \
    output.checkpoint_dir="$T/ck"
same_losses "$T/e-none.jsonl" "$T/e-pipe.jsonl" "pipeline with eval and checkpoints" 0 0
v1=$(grep '"event":"eval"' "$T/e-none.jsonl" | grep -o '"ndcg@10":[^,]*' | tr '\n' ' ')
v2=$(grep '"event":"eval"' "$T/e-pipe.jsonl" | grep -o '"ndcg@10":[^,]*' | tr '\n' ' ')
[ -n "$v1" ] && [ "$v1" = "$v2" ] && pass "evaluations agree" || fail "evaluations differ: $v1 / $v2"
expect_ok train 3 $E parallel.overlap=prioritized train.resume="$T/ck/ckpt-12.h5" \
    output.metrics="$T/e-resumed.jsonl"
same_losses "$T/e-none.jsonl" "$T/e-resumed.jsonl" "resumed at P=3 under prioritized" 12 1e-5

for key in '"exposed_comm_ms":' '"overlap":'; do
    grep -qF "$key" "$T/hstu-2-prioritized.jsonl" && pass "metrics have $key" || fail "metrics lack $key"
done
expect_error "parallel.transport = copy-engine: the cpu backend has no CUDA IPC; use parallel.transport = mpi or auto" train 2 parallel.transport=copy-engine
expect_error "parallel.transport = kernel: the cpu backend has no CUDA IPC" train 1 parallel.transport=kernel
expect_error "parallel.overlap = 'sometimes': expected one of" train 1 parallel.overlap=sometimes
finish
