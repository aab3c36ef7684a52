#!/bin/sh
# gpu-check: what a lent GPU must verify, in stages with time budgets
# (doc/gpu.md):
#
#   scripts/gpu-check.sh --quick OUT   the check that fits one run of at most
#                                      8 minutes on a 16-core H200 host
#   scripts/gpu-check.sh --full OUT    the same, then every CUDA test script
#                                      and bench/bench_gpu.sh (longer)
#   scripts/gpu-check.sh --refs DIR    (on any machine) the CPU reference runs
#                                      the placement stage compares with, and
#                                      their dataset, into DIR
#
# Programs: FREESCALE_PREBUILT=DIR takes the programs (DIR/bin) and
# libraries (DIR/lib) that scripts/gpu-bundle.sh packs, for GPU machines
# without the build's Debian packages; else this tree's build. References:
# FREESCALE_REFS=DIR (default: REFS beside the bundle, else computed now on
# the CPU, which costs the budget's time).
#
# Stages, each with a budget; before each the deadline (8 minutes from the
# start) is checked, and a stage that cannot fit fails:
#   env          nvidia-smi, the programs and their libraries, the backends
#   ops          tests/test_backend_ops (every op, the features' and ranking's
#                feat.cu among them) and tests/test_model_backends (CUDA
#                against the CPU, op by op and whole models)
#   placement    20 steps of tiny.in, HSTU and SASRec, 1 and 2 ranks (HSTU
#                also 4) on the GPU with device tables: against the CPU
#                references at 1e-5, against host tables on the GPU bit for
#                bit
#   transports   2 ranks: copy-engine and kernel against mpi (with device
#                tables their rows and gradients through CUDA IPC too;
#                tests/test_emb_ipc at 4 ranks: those transfers bitwise
#                MPI's, windows growing, nodes of 2), device
#                buffers handed to MPI when it is CUDA-aware, and
#                parallel.overlap=prefetch (the next step's rows through the
#                device-resident exchange) against prioritized
#   ctxloss      2 ranks: parallel.split_long, train.loss = full and in-batch
#                negatives on the GPU against the CPU at 1e-3
#   ml20m        HSTU at the ML-20M configuration (data of its shape), host
#                tables against device tables: tokens/s, step ms, gpu_busy,
#                the device's phases, host waits per step
#   precision    the ML-20M configuration in tf32 and bf16 (device.precision)
#                beside fp32: tokens/s, MFU, the losses within tolerance
#   heavy        the embedding-heavy case (10^7 rows, d = 128): looked-up
#                rows per second, host against device tables
# The first failure stops the check, printing the command and the tail of
# its output. A test that SKIPs counts as a failure when nvidia-smi -L lists
# a GPU. Everything goes to OUT/gpu-check.log, the final table to
# OUT/table.txt (and the end of the log), the measured runs' metrics to
# OUT/*.jsonl. Exit status 0 when every stage passed.
#
# To try the script itself without a GPU: GPU_CHECK_DEVICE=fake runs every
# stage on the fake device (doc/gpu.md), with GPU_CHECK_SECONDS (the
# deadline) and GPU_CHECK_SCALE (the stages' budgets multiplied) made
# larger, GPU_CHECK_ML_STEPS and GPU_CHECK_HEAVY_ITEMS smaller.
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$(pwd)
START=$(date +%s)
DEADLINE=$((START + ${GPU_CHECK_SECONDS:-480}))
MODE=${1:-}
OUTDIR=${2:-}
case $MODE in
    --quick | --full | --refs) ;;
    *) echo "usage: scripts/gpu-check.sh --quick OUT | --full OUT | --refs DIR" >&2; exit 2 ;;
esac
[ -n "$OUTDIR" ] || { echo "gpu-check: $MODE needs a folder" >&2; exit 2; }
mkdir -p "$OUTDIR" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)

# --- the programs -----------------------------------------------------------------
if [ -n "${FREESCALE_PREBUILT:-}" ]; then
    B=$FREESCALE_PREBUILT
    export PATH="$B/bin:$PATH" LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    FS=$B/bin/freescale TBO=$B/bin/test_backend_ops TMB=$B/bin/test_model_backends
    TEI=$B/bin/test_emb_ipc
else
    FS=$TOP/freescale TBO=$TOP/tests/test_backend_ops TMB=$TOP/tests/test_model_backends
    TEI=$TOP/tests/test_emb_ipc
fi
MPIRUN=$(command -v mpirun || echo mpirun)
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
PY=$(command -v python3 || echo /usr/bin/python3)
DEV=${GPU_CHECK_DEVICE:-cuda} # fake: the script's own trial, without a GPU
ML_STEPS=${GPU_CHECK_ML_STEPS:-40}
HEAVY_ITEMS=${GPU_CHECK_HEAVY_ITEMS:-10000000}
TINY="train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"

# train NP OVERRIDES...: tiny.in on $DATA (the references' dataset)
train() {
    np=$1
    shift
    "$MPIRUN" --bind-to none -np "$np" "$FS" train "$TOP/input/tiny.in" data.path="$DATA" \
        $TINY "$@"
}

# The CPU runs the placement stage compares with (and their dataset).
refs() { # DIR
    DATA=$1/tiny.h5
    "$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps -o "$DATA" \
        >/dev/null || return 1
    for model in hstu sasrec; do
        for np in 1 2 4; do
            [ $model = sasrec ] && [ $np = 4 ] && continue
            train $np model.type=$model device.type=cpu \
                output.metrics="$1/$model-cpu-$np.jsonl" >/dev/null 2>&1 || return 1
        done
    done
    train 2 device.type=cpu parallel.split_long=auto debug.split_chunks=2 \
        output.metrics="$1/split-cpu-2.jsonl" >/dev/null 2>&1 || return 1
    train 2 device.type=cpu train.loss=full output.metrics="$1/full-cpu-2.jsonl" \
        >/dev/null 2>&1 || return 1
    train 2 device.type=cpu train.negatives_from=in_batch \
        output.metrics="$1/inbatch-cpu-2.jsonl" >/dev/null 2>&1 || return 1
}

if [ "$MODE" = --refs ]; then
    refs "$OUTDIR" && echo "gpu-check: CPU references in $OUTDIR" && exit 0
    echo "gpu-check: the reference runs failed" >&2
    exit 1
fi

LOG=$OUTDIR/gpu-check.log
TABLE=$OUTDIR/table.txt
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
exec > "$LOG" 2>&1
: > "$TABLE"
echo "gpu-check $MODE: $(date -u +%FT%TZ) on $(hostname); deadline $((DEADLINE - START)) s"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$DEV" = fake ] && GPUS=1 # the fake device stands for one

# --- stages ------------------------------------------------------------------------
STAGE= STAGE_END=0
table() { echo "$*" | tee -a "$TABLE"; }
finish() { # STATUS
    table "stage $STAGE: ${1}"
    echo "gpu-check: ${1} after $(( $(date +%s) - START )) s"
    echo "=== table"
    cat "$TABLE"
    [ "$1" = PASS ] && exit 0
    exit 1
}
stage() { # NAME BUDGET_SECONDS
    [ -n "$STAGE" ] && table "stage $STAGE: PASS ($(( $(date +%s) - STAGE_T0 )) s)"
    STAGE=$1
    budget=$(($2 * ${GPU_CHECK_SCALE:-1}))
    STAGE_T0=$(date +%s)
    STAGE_END=$((STAGE_T0 + budget))
    echo "=== stage $1 (budget $budget s, $((DEADLINE - STAGE_T0)) s left)"
    if [ "$STAGE_END" -gt "$DEADLINE" ]; then
        echo "gpu-check: stage $1 needs $budget s; only $((DEADLINE - STAGE_T0)) s left"
        finish "FAIL (deadline)"
    fi
}
# check NAME CMD...: run CMD within the stage's budget; a failure (or a SKIP
# where a GPU is listed) ends the check with the command and its output's tail
check() {
    name=$1
    shift
    left=$((STAGE_END - $(date +%s)))
    [ $left -lt 5 ] && left=5
    echo "--- $name"
    timeout "$left" "$@" > "$W/cmd.out" 2>&1
    rc=$?
    cat "$W/cmd.out" >> "$W/all.out"
    if [ $rc -eq 77 ] && [ "$GPUS" -eq 0 ]; then
        echo "--- $name: SKIP (no GPU listed)"
        return 0
    fi
    [ $rc -eq 0 ] && { echo "--- $name: ok"; return 0; }
    why="exit $rc"
    [ $rc -eq 124 ] && why="out of the stage's time"
    [ $rc -eq 77 ] && why="SKIP, but nvidia-smi lists $GPUS GPU(s)"
    echo "--- $name: FAIL ($why)"
    echo "command: $*"
    echo "its output's last lines:"
    tail -n 40 "$W/cmd.out"
    finish "FAIL: $name ($why)"
}
# metric FILE FIELD: the median of FIELD over the train lines after the first
metric() {
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
v = [json.loads(l).get(sys.argv[2]) for l in open(sys.argv[1]) if '"event":"train"' in l]
v = sorted(x for x in v[1:] if isinstance(x, (int, float)))
print(v[(len(v) - 1) // 2] if v else 0)
PYEOF
}
# same NAME A B TOL: the train losses of two metrics files agree to TOL
same() {
    "$PY" - "$2" "$3" "$4" <<'PYEOF' || finish "FAIL: $1"
import json, sys
def losses(p):
    return [(j['step'], j['loss']) for j in map(json.loads, open(p)) if j.get('event') == 'train']
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not a or [s for s, _ in a] != [s for s, _ in b]:
    sys.exit('different steps: %d vs %d' % (len(a), len(b)))
worst = max(abs(x - y) / max(abs(y), 1e-12) for (_, x), (_, y) in zip(a, b))
print('worst relative difference %.3g (tolerance %g)' % (worst, tol))
sys.exit(0 if worst <= tol else 'losses differ by %.3g' % worst)
PYEOF
    echo "--- $1: ok"
}
# row CONFIG METRICS: the table's line of a measured run
row() {
    f=$2
    tps=$(metric "$f" tokens_per_s) busy=$(metric "$f" gpu_busy) syncs=$(metric "$f" device_syncs)
    step=$("$PY" - "$f" <<'PYEOF'
import json, sys
keys = ['read_ms', 'plan_ms', 'input_dist_ms', 'lookup_ms', 'forward_ms', 'backward_ms',
        'grad_exchange_ms', 'allreduce_ms', 'optimizer_ms', 'kv_wait_ms']
v = sorted(sum(j.get(k, 0) for k in keys) for j in map(json.loads, open(sys.argv[1]))
           if j.get('event') == 'train')[1:] or [0]
print('%.1f' % v[(len(v) - 1) // 2])
PYEOF
)
    ph=""
    for p in forward backward exchange optimizer; do
        ph="$ph $(printf '%7.1f' "$(metric "$f" gpu_${p}_ms)")"
    done
    table "$(printf '%-28s %10.0f %8s %6.0f%% %s %6.1f  PASS' "$1" "$tps" "$step" \
        "$(awk -v b="$busy" 'BEGIN { print 100 * b }')" "$ph" "$syncs")"
}

# --- env ---------------------------------------------------------------------------
stage env 20
nvidia-smi -L || echo "nvidia-smi: not available"
echo "GPUs listed: $GPUS"
check "freescale --version" "$FS" --version
grep -q "backends: .*$DEV" "$W/cmd.out" || {
    [ "$GPUS" -gt 0 ] && finish "FAIL: env (this freescale has no CUDA backend)"
    echo "no CUDA backend: the GPU stages will SKIP"
}
for p in "$FS" "$TBO" "$TMB"; do
    if ldd "$p" 2>/dev/null | grep 'not found'; then
        finish "FAIL: env ($p: libraries missing)"
    fi
done
check "mpirun" "$MPIRUN" --version

# --- ops ---------------------------------------------------------------------------
stage ops 120
check test_backend_ops "$TBO" $DEV
check test_model_backends "$TMB" $DEV
if [ "$GPUS" -eq 0 ]; then
    table "no GPU: the GPU stages are not run"
    finish PASS
fi

# --- placement ---------------------------------------------------------------------
stage placement 120
REFS=${FREESCALE_REFS:-}
if [ -z "$REFS" ] && [ -n "${FREESCALE_PREBUILT:-}" ] && [ -d "$FREESCALE_PREBUILT/../ref" ]; then
    REFS=$FREESCALE_PREBUILT/../ref
fi
if [ -z "$REFS" ]; then
    REFS=$W/ref
    mkdir -p "$REFS"
    echo "--- CPU references (none carried: computed now)"
    refs "$REFS" || finish "FAIL: the CPU reference runs (scripts/gpu-check.sh --refs DIR)"
fi
DATA=$REFS/tiny.h5
GPU="device.type=$DEV device.share=on parallel.transport=mpi"
TRAIN="$MPIRUN --bind-to none -np" # then NP "$FS" train ...
for model in hstu sasrec; do
    for np in 1 2 4; do
        [ $model = sasrec ] && [ $np = 4 ] && continue
        check "$model P=$np device tables" $TRAIN $np "$FS" train "$TOP/input/tiny.in" \
            data.path="$DATA" $TINY model.type=$model $GPU embedding.placement=device \
            output.metrics="$W/$model-dev-$np.jsonl"
        same "$model P=$np: device tables vs the CPU" "$W/$model-dev-$np.jsonl" \
            "$REFS/$model-cpu-$np.jsonl" 1e-5
        [ $np = 4 ] && continue
        check "$model P=$np host tables" $TRAIN $np "$FS" train "$TOP/input/tiny.in" \
            data.path="$DATA" $TINY model.type=$model $GPU embedding.placement=host \
            output.metrics="$W/$model-host-$np.jsonl"
        same "$model P=$np: device vs host tables, bit for bit" "$W/$model-dev-$np.jsonl" \
            "$W/$model-host-$np.jsonl" 0
    done
done

# --- transports --------------------------------------------------------------------
stage transports 60
for tp in copy-engine kernel; do
    check "transport $tp" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" data.path="$DATA" $TINY \
        device.type=$DEV device.share=on embedding.placement=device parallel.transport=$tp \
        output.metrics="$W/tp-$tp.jsonl"
    same "transport $tp vs mpi" "$W/tp-$tp.jsonl" "$W/hstu-dev-2.jsonl" 1e-5
done
check "embedding transfers through CUDA IPC (test_emb_ipc)" env FREESCALE_TEST_DEVICE=$DEV \
    $MPIRUN --bind-to none -np 4 "$TEI"
[ "$DEV" = fake ] && export FREESCALE_FAKE_AWARE=1
if train 2 $GPU embedding.placement=device device.staging=direct \
    output.metrics="$W/direct.jsonl" > "$W/cmd.out" 2>&1; then
    same "device buffers to CUDA-aware MPI" "$W/direct.jsonl" "$W/hstu-dev-2.jsonl" 1e-5
elif grep -q 'is not CUDA-aware' "$W/cmd.out"; then
    table "direct (device buffers to MPI): not run, this MPI is not CUDA-aware"
else
    echo "command: train 2 $GPU embedding.placement=device device.staging=direct"
    tail -n 40 "$W/cmd.out"
    finish "FAIL: direct"
fi
unset FREESCALE_FAKE_AWARE
check "overlap=prefetch, device tables" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" \
    data.path="$DATA" $TINY $GPU embedding.placement=device parallel.overlap=prefetch \
    output.metrics="$W/prefetch.jsonl"
same "prefetch vs prioritized, device tables" "$W/prefetch.jsonl" "$W/hstu-dev-2.jsonl" 1e-5

# --- ctxloss: split_long, train.loss = full, in-batch negatives (2 ranks, host
# tables) against the CPU at 1e-3 (other summation orders than the CPU's, as
# tests/cuda_ctx_loss.sh); CPU references not carried are computed now
stage ctxloss 45
for cfg in "split parallel.split_long=auto debug.split_chunks=2" "full train.loss=full" \
    "inbatch train.negatives_from=in_batch"; do
    set -- $cfg
    cl=$1 # (check sets name)
    shift
    ref=$REFS/$cl-cpu-2.jsonl
    if [ ! -f "$ref" ]; then
        ref=$W/$cl-cpu-2.jsonl
        check "$cl P=2 on the CPU" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" \
            data.path="$DATA" $TINY device.type=cpu "$@" output.metrics="$ref"
    fi
    check "$cl P=2" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" data.path="$DATA" $TINY $GPU \
        "$@" output.metrics="$W/$cl-dev-2.jsonl"
    same "$cl P=2: the GPU vs the CPU" "$W/$cl-dev-2.jsonl" "$ref" 1e-3
done

# --- ml20m ---------------------------------------------------------------------------
stage ml20m 170
check "ML-20M-shape data" "$FS" data gen --users 20000 --items 26744 \
    --length lognormal:4.4,1.1 --timestamps --seed 7 -o "$W/ml20m.h5"
table "$(printf '%-28s %10s %8s %7s %7s %7s %7s %7s %6s' config tokens/s step_ms busy fwd_ms \
    bwd_ms xchg_ms opt_ms syncs)"
ml20m() { # NAME OVERRIDES...
    name=$1
    shift
    check "$name" $TRAIN 1 "$FS" train "$TOP/input/ml20m-hstu.in" \
        data.path="$W/ml20m.h5" device.type=$DEV train.max_steps=$ML_STEPS \
        train.log_every=$((ML_STEPS / 4 > 0 ? ML_STEPS / 4 : 1)) \
        train.final_eval=off "$@"
}
ml20m "ML-20M host tables" embedding.placement=host output.metrics="$OUTDIR/ml20m-host.jsonl"
row "ML-20M, 1 rank, host tables" "$OUTDIR/ml20m-host.jsonl"
ml20m "ML-20M device tables" embedding.placement=device output.metrics="$OUTDIR/ml20m-dev.jsonl"
row "ML-20M, 1 rank, device tables" "$OUTDIR/ml20m-dev.jsonl"
same "ML-20M: device vs host tables" "$OUTDIR/ml20m-dev.jsonl" "$OUTDIR/ml20m-host.jsonl" 1e-5
h=$(metric "$OUTDIR/ml20m-host.jsonl" tokens_per_s) d=$(metric "$OUTDIR/ml20m-dev.jsonl" tokens_per_s)
table "$(awk -v h="$h" -v d="$d" 'BEGIN { printf "device / host tables: %.2fx tokens/s (the aim: >= 5x)", (h > 0 ? d / h : 0) }')"

# --- precision -------------------------------------------------------------------------
# device.precision at the ML-20M configuration (host tables; fp32: the run
# above): tokens/s, MFU against the run's own measured gemm peak (the
# peak's column), the losses of tf32 and bf16 within 1e-2 and 3e-2 of
# fp32's (relative, step by step), bf16 / tf32 tokens/s (the aim: >= 1.5x)
stage precision 120
table "$(printf '%-28s %10s %7s %12s' precision tokens/s mfu peak_gflops)"
for pr in fp32 tf32 bf16; do
    f=$OUTDIR/ml20m-host.jsonl
    [ $pr = fp32 ] || {
        f=$OUTDIR/ml20m-$pr.jsonl
        ml20m "ML-20M $pr" embedding.placement=host device.precision=$pr output.metrics="$f"
    }
    table "$(printf '%-28s %10.0f %6.1f%% %12.0f' "ML-20M, 1 rank, $pr" "$(metric "$f" tokens_per_s)" \
        "$(awk -v m="$(metric "$f" mfu)" 'BEGIN { print 100 * m }')" "$(metric "$f" peak_gflops)")"
done
same "ML-20M: tf32 vs fp32 losses" "$OUTDIR/ml20m-tf32.jsonl" "$OUTDIR/ml20m-host.jsonl" 1e-2
same "ML-20M: bf16 vs fp32 losses" "$OUTDIR/ml20m-bf16.jsonl" "$OUTDIR/ml20m-host.jsonl" 3e-2
t=$(metric "$OUTDIR/ml20m-tf32.jsonl" tokens_per_s) b=$(metric "$OUTDIR/ml20m-bf16.jsonl" tokens_per_s)
table "$(awk -v t="$t" -v b="$b" 'BEGIN { printf "bf16 / tf32: %.2fx tokens/s (the aim: >= 1.5x)", (t > 0 ? b / t : 0) }')"

# --- heavy ---------------------------------------------------------------------------
stage heavy 90
check "heavy data" "$FS" data gen --users 20000 --items "$HEAVY_ITEMS" --length lognormal:4.4,1.1 \
    --zipf 0.8 --seed 9 -o "$W/heavy.h5"
for pl in host device; do
    check "heavy, $pl tables" $TRAIN 1 "$FS" train \
        "$TOP/input/ml20m-hstu.in" data.path="$W/heavy.h5" device.type=$DEV model.dim=128 \
        model.layers=1 embedding.placement=$pl train.max_steps=$ML_STEPS \
        train.log_every=$((ML_STEPS / 4 > 0 ? ML_STEPS / 4 : 1)) \
        train.final_eval=off output.metrics="$OUTDIR/heavy-$pl.jsonl"
    row "heavy (10^7 rows), $pl tables" "$OUTDIR/heavy-$pl.jsonl"
    table "$(awk -v t="$(metric "$OUTDIR/heavy-$pl.jsonl" tokens_per_s)" -v p=$pl \
        'BEGIN { printf "heavy, %s tables: %.0f looked-up rows/s (130 per token)", p, 130 * t }')"
done

if [ "$MODE" = --full ]; then
    DEADLINE=$((DEADLINE + ${GPU_CHECK_FULL_SECONDS:-1800}))
    stage tests 1500
    export FREESCALE="$FS" TOP_SRCDIR="$TOP" MPIRUN
    for t in cuda_train cuda_placement cuda_ctx_loss cli_device cli_overlap cuda_feat; do
        check "$t" sh "tests/$t.sh"
    done
    check bench_gpu env FREESCALE="$FS" BENCH_GEMM="${FREESCALE_PREBUILT:+$FREESCALE_PREBUILT/bin/}bench_gemm" \
        PY="$PY" sh bench/bench_gpu.sh 60
    cat "$W/cmd.out"
fi
STAGE_T0=${STAGE_T0:-$START}
finish PASS
