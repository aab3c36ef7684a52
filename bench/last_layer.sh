#!/bin/sh
# bench/last_layer.sh: model.last_layer = targets against full (doc/ranking.md,
# "The last layer at the targets alone"): the time of the last HSTU layer's
# forward and backward, and of the training step, on a ranking run with
# interleaved actions (item, action, item, action, ...: the loss reads the
# item tokens' outputs, half the rows) over planted data (data gen --labels
# planted, input/planted-rank.in as the base).
#   the last layer: bench/bench_last_layer (built here when missing): the
#                   model's forward + backward at the same shape with
#                   model.layers = 1 (the layer, with the input layer's sum
#                   and the final L2 norm, a few per cent of it) and LAYERS,
#                   in CPU ms (min of 5 calls: what other processes perturb
#                   least)
#   the step:       freescale train, model.layers = LAYERS: the CPU time of
#                   a step (user + system of a run of 3 STEPS steps less
#                   one of STEPS, over 2 STEPS: start-up cancels out), and
#                   its wall time (interval_s) and forward_ms + backward_ms
#                   (the model and the ranking head), medians over steps 3..
#                   of a run; each the median over the runs, the modes
#                   alternating (full, targets, full, ...) so that a change
#                   of load hits both.
#   the evaluation: the CPU time of a run of 2 steps with train.final_eval =
#                   on less one without (the validation and test
#                   evaluations: the candidates' outputs alone are read, the
#                   history's not at all), the median over the runs.
# Prints both, the ratios, and the load average before and after (say it
# with the figures: a loaded machine slows both modes).
#
# usage: bench/last_layer.sh [--runs N]     (default 3)
# environment: FREESCALE (the program), USERS (400), LENGTH (events a user,
# 250: 500 tokens), DIM (64), HEADS (2), LAYERS (3), STEPS (10), BATCH (16),
# NP (ranks, 1), ARGS (extra overrides for every run), BENCH (the
# bench_last_layer program).
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
RUNS=3
if [ "${1:-}" = "--runs" ]; then
    [ -n "${2:-}" ] && [ "$2" -ge 1 ] 2>/dev/null || { echo "last_layer.sh: --runs N (N >= 1)" >&2; exit 2; }
    RUNS=$2
    shift 2
fi
[ $# -eq 0 ] || { echo "usage: bench/last_layer.sh [--runs N]" >&2; exit 2; }
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "last_layer.sh: set FREESCALE to the program" >&2; exit 2; }
USERS=${USERS:-400} LENGTH=${LENGTH:-250} DIM=${DIM:-64} HEADS=${HEADS:-2} LAYERS=${LAYERS:-3}
STEPS=${STEPS:-10} BATCH=${BATCH:-16} NP=${NP:-1} ARGS=${ARGS:-}
[ "$STEPS" -ge 4 ] || { echo "last_layer.sh: STEPS must be >= 4 (steps 1-2 are warm-up)" >&2; exit 2; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-lastlayer.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up

"$FS" data gen --users "$USERS" --items 500 --length "fixed:$LENGTH" --timestamps --zipf 0.5 \
    --labels planted:2 --seed 1 -o "$W/planted.h5" > "$W/gen.out" 2>&1 ||
    { cat "$W/gen.out" >&2; exit 1; }
load0=$(cut -d' ' -f1-3 /proc/loadavg)
BENCH=${BENCH:-$here/bench/bench_last_layer}
if [ ! -x "$BENCH" ]; then
    make -C "$here" -s bench/bench_last_layer > "$W/make.out" 2>&1 || { cat "$W/make.out" >&2; exit 1; }
fi
"$BENCH" 5 "$BATCH" "$LENGTH" "$DIM" "$HEADS" "$LAYERS" > "$W/layer.out" ||
    { cat "$W/layer.out" >&2; exit 1; }

# one NAME STEPS MODE [EVAL]: a run of STEPS steps (EVAL: train.final_eval, off);
# its medians (steps 3..) "step_ms model_ms" to $W/NAME, its CPU seconds (user +
# system, all ranks) to $W/NAME.cpu
one() {
    launch=""
    [ "$NP" -gt 1 ] && launch="mpirun -np $NP"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%U %S' -o "$W/$1.time" $launch "$FS" train "$here/input/planted-rank.in" \
        "data.path=$W/planted.h5" "data.max_seq_len=$LENGTH" model.actions=interleave \
        "model.dim=$DIM" "model.heads=$HEADS" "model.layers=$LAYERS" "model.last_layer=$3" \
        "train.batch_size=$BATCH" "train.max_steps=$2" "train.final_eval=${4:-off}" train.log_every=1 \
        "output.metrics=$W/$1.jsonl" $ARGS > "$W/$1.out" 2>&1 || { tail -5 "$W/$1.out" >&2; exit 1; }
    awk '{ print $1 + $2 }' "$W/$1.time" > "$W/$1.cpu"
    sed -n 's/.*"event":"train".*"step":\([0-9]*\),.*"interval_s":\([^,]*\),.*"forward_ms":\([^,]*\),.*"backward_ms":\([^,]*\),.*/\1 \2 \3 \4/p' \
        "$W/$1.jsonl" | awk -v n="$2" '$1 >= (n < 3 ? 1 : 3) { print $2 * 1000, $3 + $4 }' > "$W/$1.steps"
    [ -s "$W/$1.steps" ] || { echo "last_layer.sh: no train lines in $W/$1.jsonl" >&2; exit 1; }
    printf '%s %s\n' "$(cut -d' ' -f1 "$W/$1.steps" | med)" "$(cut -d' ' -f2 "$W/$1.steps" | med)" > "$W/$1"
}
med() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# per run: STEPS and 3 STEPS steps; the CPU ms of a step = the difference / 2 STEPS
for r in $(seq 1 "$RUNS"); do
    for mode in full targets; do
        one "s-$mode-$r" "$STEPS" "$mode"
        one "d-$mode-$r" $((3 * STEPS)) "$mode"
        awk -v a="$(cat "$W/s-$mode-$r.cpu")" -v b="$(cat "$W/d-$mode-$r.cpu")" -v n=$((2 * STEPS)) \
            'BEGIN { print (b - a) * 1000 / n }' > "$W/c-$mode-$r"
        one "n-$mode-$r" 2 "$mode" off
        one "e-$mode-$r" 2 "$mode" on
        awk -v a="$(cat "$W/n-$mode-$r.cpu")" -v b="$(cat "$W/e-$mode-$r.cpu")" \
            'BEGIN { print (b - a) * 1000 }' > "$W/v-$mode-$r"
    done
done
# col CONF MODE FIELD: the median over the runs
col() { for r in $(seq 1 "$RUNS"); do cut -d' ' -f"$3" "$W/$1-$2-$r"; done | med; }
row() {
    f=$(col "$2" full "$3") t=$(col "$2" targets "$3")
    awk -v n="$1" -v f="$f" -v t="$t" 'BEGIN { printf "%-38s %10.1f %10.1f %8.2fx\n", n, f, t, f / t }'
}
echo "model.last_layer: full vs targets, $(date -u '+%Y-%m-%d %H:%M UTC'), $(uname -n), $NP rank(s)"
echo "planted data: $USERS users x $LENGTH events, max_seq_len $LENGTH, interleaved actions"
echo "(up to $((2 * LENGTH)) tokens a sequence, the loss reads the items), dim $DIM, $HEADS heads, batch $BATCH"
echo
cat "$W/layer.out"
echo
echo "freescale train, layers = $LAYERS, medians over $RUNS runs a mode:"
printf '%-38s %10s %10s %9s\n' "" "full ms" "targets ms" "speed-up"
row "step, CPU (runs of $((3 * STEPS)) less $STEPS steps)" c 1
row "step, wall (median of steps 3..)" d 1
row "forward + backward, wall" d 2
row "evaluation (val + test), CPU" v 1
echo "load average: before $load0, after $(cut -d' ' -f1-3 /proc/loadavg)"
