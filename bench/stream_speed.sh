#!/bin/sh
# stream_speed: the stream schedule's training speed against epoch training
# on the same events (doc/training.md, "Streaming").
#
#   bench/stream_speed.sh [PAIRS]        (default 3 interleaved pairs)
#   SS_NP=2 SS_USERS=4000 bench/stream_speed.sh
#
# `data gen --stream --labels`: 10 days of SS_USERS users (default 4000),
# 2000 items, 2..10 events a day when active; raw ids, so the item table
# is dynamic in both runs. A ranking HSTU (d = 64, 2 layers, histories of
# 64, batch 128) on SS_NP ranks (default 2):
#   stream  train.schedule = stream, one-day windows: the tokens/s of the
#           windows' training (each window line's tokens over its training
#           seconds; window 0 left out: the first steps);
#   epochs  3 epochs of data.split = last:1 over the same file: the median
#           tokens/s of the progress intervals (the first left out).
# Tokens are the positions of the training sequences in both (a window's
# history positions included). Prints each pair, the medians and their
# ratio stream / epochs, and the share of the windows' time spent training
# (the rest: each window's evaluation, baselines and split). Never asserted.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
[ -x "$FS" ] || { echo "stream_speed: $FS not built"; exit 1; }
MPIRUN=${MPIRUN:-mpirun}
NP=${SS_NP:-2} PAIRS=${1:-3}
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-ss.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
"$FS" data gen --stream --days 10 --users "${SS_USERS:-4000}" --items 2000 --per-day 2,10 \
    --labels --seed 5 -o "$W/s.h5" | tail -n 1
cat > "$W/s.in" <<IN
[data]
path = $W/s.h5
max_seq_len = 64
[model]
type = hstu
dim = 64
layers = 2
heads = 2
dropout = 0
actions = sum
head = 64
[train]
task = ranking
tasks = like:binary:like
batch_size = 128
log_every = 4
eval_every = 0
final_eval = off
[embedding]
optimizer = adam
dynamic = on
IN
run() { # NAME ARGS...
    n=$1; shift
    "$MPIRUN" -np "$NP" "$FS" train "$W/s.in" output.metrics="$W/$n.jsonl" "$@" > "$W/$n.log" 2>&1 ||
        { echo "stream_speed: $n failed:"; tail -n 5 "$W/$n.log"; exit 1; }
}
stream_tps() { # the windows' training tokens over their seconds (window 0 left out)
    sed -n 's/.*"event":"window","window":\([0-9]*\),.*"tokens_per_s":\([^,]*\),.*"train_s":\([^,]*\),.*/\1 \2 \3/p' "$1" |
        awk '$1 > 0 { t += $2 * $3; s += $3 } END { printf "%.0f\n", (s > 0 ? t / s : 0) }'
}
epochs_tps() { # the median of the progress intervals (the first left out)
    sed -n 's/.*"event":"train".*"tokens_per_s":\([^,]*\),.*/\1/p' "$1" | tail -n +2 | sort -g |
        awk '{ v[NR] = $1 } END { printf "%.0f\n", (NR ? v[int((NR + 1) / 2)] : 0) }'
}
echo "machine: $(nproc) CPUs; $NP ranks; $PAIRS interleaved pairs"
: > "$W/pairs"
for r in $(seq "$PAIRS"); do
    run stream train.schedule=stream data.window=1d
    run epochs train.epochs=3 data.split=last:1
    s=$(stream_tps "$W/stream.jsonl") e=$(epochs_tps "$W/epochs.jsonl")
    echo "$s $e" >> "$W/pairs"
    awk -v s="$s" -v e="$e" -v r="$r" 'BEGIN { printf "pair %d: stream %.0f tokens/s, epochs %.0f tokens/s, ratio %.2f\n", r, s, e, s / e }'
done
med() { sort -g | awk '{ v[NR] = $1 } END { print (NR ? v[int((NR + 1) / 2)] : 0) }'; }
ms=$(cut -d' ' -f1 "$W/pairs" | med) me=$(cut -d' ' -f2 "$W/pairs" | med)
mq=$(awk '{ print ($2 > 0 ? $1 / $2 : 0) }' "$W/pairs" | med)
printf 'medians: stream %.0f, epochs %.0f tokens/s; ratio stream / epochs: median of the pairs %.2f\n' \
    "$ms" "$me" "$mq"
# the rest of a window's time (its split, evaluation and baselines), last stream run
sed -n 's/.*"event":"window","window":\([0-9]*\),.*"train_s":\([^,]*\),"seconds":\([^,]*\),.*/\1 \2 \3/p' \
    "$W/stream.jsonl" | awk '$1 > 0 { t += $2; s += $3 }
    END { printf "the windows'"'"' training: %.0f%% of their time (the rest: evaluating each window before it is trained, its baselines, its split)\n", (s > 0 ? 100 * t / s : 0) }'
