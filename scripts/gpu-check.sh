#!/bin/sh
# gpu-check: what a lent GPU must verify and measure, in stages with time
# budgets (doc/gpu.md):
#
#   scripts/gpu-check.sh --quick OUT   one run of at most 8 minutes on a
#                                      16-core H200 host (machine start not
#                                      counted)
#   scripts/gpu-check.sh --full OUT    the same, then every CUDA test script
#                                      and bench/bench_gpu.sh (longer)
#   scripts/gpu-check.sh --refs DIR    (on any machine) the CPU reference runs
#                                      the check compares with, and their
#                                      dataset, into DIR
#
# Programs: FREESCALE_BUNDLE=DIR takes the folder scripts/gpu-bundle.sh
# wrote (unpacks DIR/bundle.tar.xz into a temporary prefix, finds the CUDA
# libraries through scripts/gpu-env.sh, and takes DIR/ref as the CPU
# references): the way to run on a GPU machine without Open MPI and HDF5.
# FREESCALE_PREBUILT=PREFIX takes an already unpacked bundle; else this
# tree's build. FREESCALE_REFS=DIR overrides the references (default: the
# bundle's, else computed now on the CPU, which costs the placement
# stage's time).
#
# Stages, each with a share of the deadline (480 s; the shares add up to
# 480): a stage's budget is the time left to the deadline times its share
# over the shares of the stages not yet run, so the time a stage leaves
# unused passes to the stages after it; every command runs under the time
# left to its stage. A failed check is recorded and the check goes on: a
# stage whose own earlier step failed skips what depends on it, and every
# measuring stage runs whatever failed before it. A sanitizer run cut by
# its budget is reported as incomplete, not failed.
# GPU_CHECK_STAGES="NAME ..." runs only those stages (their shares then
# split the whole deadline), e.g. GPU_CHECK_STAGES=workloads.
#   env          nvidia-smi, the programs and their libraries, the launcher
#   sanitizer    compute-sanitizer memcheck over test_backend_ops' kernels
#                that had never run on a GPU, racecheck over the attention
#                kernels (capped; without compute-sanitizer: not run)
#   ops          tests/test_backend_ops under FREESCALE_CUDA_SYNC=1 (a fault
#                is reported at its kernel) and tests/test_model_backends
#   placement    20 steps of tiny.in, HSTU and SASRec, 1 and 2 ranks (HSTU
#                also 4) with device tables against the CPU references
#                (1e-3, as the CUDA tests), device against host tables and
#                a rerun against the first run on the GPU bit for bit (both
#                bitwise by design: fixed-order sums, no float atomics);
#                HSTU at 2 ranks with a device cache over host tables
#                (embedding.cache = 1.0, overlap prioritized and prefetch)
#                against the host tables bit for bit
#   workloads    1 and 2 ranks of (a) input/gpu-rank.in (HSTU ranking with
#                item, event and user features, model.bias, model.recency,
#                model.factors), (b) input/gpu-dyn.in (retrieval over a
#                dynamic item table: admit 2, lru eviction at a capacity),
#                (c) input/gpu-stream.in (a stream over window files with
#                dynamic tables): host and device tables against the CPU
#                references (1e-3; the stream's windows too), device
#                against host tables bit for bit
#   transports   2 ranks: copy-engine and kernel against mpi (device tables'
#                rows and gradients through CUDA IPC), tests/test_emb_ipc at
#                4 ranks, device.staging=direct (device buffers handed to
#                MPI; through the bundle's CUDA-aware Open MPI, its second
#                launcher, where the bundle has one) against staged, bit for
#                bit, parallel.overlap=prefetch against prioritized
#   ctxloss      2 ranks: parallel.split_long, train.loss = full and in-batch
#                negatives against the CPU at 1e-3
#   ml20m        HSTU at the ML-20M configuration (data of its shape),
#                device tables first (the device figure always gets time),
#                then host tables, bit for bit: tokens/s, step ms, gpu_busy,
#                the device's phases, host waits per step
#   precision    the ML-20M configuration in tf32 and bf16 beside fp32:
#                tokens/s, MFU, the losses within tolerance
#   heavy        an embedding-heavy case (GPU_CHECK_HEAVY_ITEMS rows, d =
#                128): looked-up rows per second, device tables first, then
#                host tables
#
# Output: a line per stage and per check on stdout (and in the log); under
# OUT at most four files: table.txt (the results), gpu-check.log (every
# command's output), metrics.tar.gz (the measured runs' metrics, packed
# again after each stage, so that a run cut short keeps what it measured),
# sanitizer.log. Exit status 0 when every check passed.
#
# To try the script without a GPU: GPU_CHECK_DEVICE=fake runs every stage
# on the fake device, with GPU_CHECK_SECONDS (the deadline; the budgets
# scale with it), GPU_CHECK_ML_STEPS and GPU_CHECK_HEAVY_ITEMS;
# GPU_CHECK_FAIL=STAGE makes that stage's first check fail (to see the
# check go on), GPU_CHECK_CUT=STAGE its first check end as if cut by the
# budget (the sanitizer's: incomplete). scripts/gpu-rehearse.sh runs it so
# on a bare root file system.
set -u
cd "$(dirname "$0")/.." || exit 1
TOP=$(pwd)
START=$(date +%s)
SECONDS_ALL=${GPU_CHECK_SECONDS:-480}
DEADLINE=$((START + SECONDS_ALL))
MODE=${1:-}
OUTDIR=${2:-}
case $MODE in
    --quick | --full | --refs) ;;
    *) echo "usage: scripts/gpu-check.sh --quick OUT | --full OUT | --refs DIR" >&2; exit 2 ;;
esac
[ -n "$OUTDIR" ] || { echo "gpu-check: $MODE needs a folder" >&2; exit 2; }
mkdir -p "$OUTDIR" || exit 1
OUTDIR=$(cd "$OUTDIR" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT

# --- the programs -----------------------------------------------------------------
ENV_FAIL=
if [ -n "${FREESCALE_BUNDLE:-}" ]; then
    # tar needs the xz program for .xz; Python's tarfile does not
    mkdir -p "$W/prefix" && { tar xJf "$FREESCALE_BUNDLE/bundle.tar.xz" -C "$W/prefix" 2>/dev/null ||
        python3 -c 'import sys, tarfile
t = tarfile.open(sys.argv[1])
try:
    t.extractall(sys.argv[2], filter="fully_trusted")
except TypeError:
    t.extractall(sys.argv[2])' "$FREESCALE_BUNDLE/bundle.tar.xz" "$W/prefix"; } ||
        { echo "gpu-check: cannot unpack $FREESCALE_BUNDLE/bundle.tar.xz" >&2; exit 1; }
    FREESCALE_PREBUILT=$W/prefix
    [ -n "${FREESCALE_REFS:-}" ] || FREESCALE_REFS=$(cd "$FREESCALE_BUNDLE" && pwd)/ref
fi
if [ -n "${FREESCALE_PREBUILT:-}" ]; then
    B=$FREESCALE_PREBUILT
    GPU_ENV_PREFIX=$B
    . "$TOP/scripts/gpu-env.sh" > "$W/env.out" 2>&1 || ENV_FAIL=1
    FS=$B/bin/freescale TBO=$B/bin/test_backend_ops TMB=$B/bin/test_model_backends
    TEI=$B/bin/test_emb_ipc BENCH_GEMM=$B/bin/bench_gemm
else
    FS=$TOP/freescale TBO=$TOP/tests/test_backend_ops TMB=$TOP/tests/test_model_backends
    TEI=$TOP/tests/test_emb_ipc BENCH_GEMM=$TOP/bench/bench_gemm
    : > "$W/env.out"
fi
MPIRUN=$(command -v mpirun || echo mpirun)
DEV=${GPU_CHECK_DEVICE:-cuda} # fake: the script's own trial, without a GPU
# The second launcher: a CUDA-aware Open MPI of the same version
# (scripts/gpu-ompi.sh), the bundle's ompi-cuda/ or FREESCALE_OMPI_CUDA=
# PREFIX with this tree's build, for the device.staging=direct runs alone:
# its libraries (LD_LIBRARY_PATH for those commands only, Open MPI's own)
# take the place of the libmpi.so.40 the programs were linked with
OMPI_CUDA=${FREESCALE_OMPI_CUDA:-}
[ -n "${FREESCALE_PREBUILT:-}" ] && [ -x "$FREESCALE_PREBUILT/ompi-cuda/bin/orterun" ] &&
    OMPI_CUDA=$FREESCALE_PREBUILT/ompi-cuda
MPIRUN_CUDA=
if [ -n "$OMPI_CUDA" ]; then
    o=$OMPI_CUDA
    MPIRUN_CUDA="env LD_LIBRARY_PATH=$o/lib OPAL_PREFIX=$o OPAL_LIBDIR=$o/lib
        OPAL_PKGLIBDIR=$o/lib/openmpi OPAL_PKGDATADIR=$o/share/openmpi OPAL_SYSCONFDIR=$o/etc
        OPAL_BINDIR=$o/bin $o/bin/orterun"
    # no libcuda.so.1 without a GPU driver: no warning about it then
    [ "$DEV" = fake ] && MPIRUN_CUDA="env OMPI_MCA_opal_warn_on_missing_libcuda=0 $MPIRUN_CUDA"
fi
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
PY=$(command -v python3 || echo /usr/bin/python3)
ML_STEPS=${GPU_CHECK_ML_STEPS:-40}
HEAVY_ITEMS=${GPU_CHECK_HEAVY_ITEMS:-3000000}
TINY="train.epochs=10 train.max_steps=20 train.log_every=1 train.final_eval=off"

# train NP OVERRIDES...: tiny.in on $DATA (the references' dataset)
train() {
    np=$1
    shift
    "$MPIRUN" --bind-to none -np "$np" "$FS" train "$TOP/input/tiny.in" data.path="$DATA" \
        $TINY "$@"
}

# wl_args W DIR: the input file and overrides of the workloads stage's run
# W (rank, dyn, stream: input/gpu-W.in) on the datasets under DIR (one
# word each: DIR has no blanks; the stream's pattern matches no file name
# of the current folder, so it stays as it is)
WORKLOADS="rank dyn stream"
wl_args() {
    case $1 in
        rank | dyn) echo "$TOP/input/gpu-$1.in data.path=$2/$1.h5 train.max_steps=20 train.final_eval=off" ;;
        stream) echo "$TOP/input/gpu-stream.in data.path=$2/stream/day-*.h5" ;;
    esac
}

# The CPU runs the placement, workloads and ctxloss stages compare with (and
# their datasets).
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
    # the workloads stage's datasets and runs
    "$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps \
        --item-feature genres:12:3 --event-feature act:5 --user-feature age:7 --labels planted \
        -o "$1/rank.h5" >/dev/null 2>&1 || return 1
    "$FS" data gen --users 64 --items 2000 --length pareto:8,1.2 --max-length 60 --timestamps \
        -o "$1/dyn.h5" >/dev/null 2>&1 || return 1
    "$FS" data gen --stream --days 3 --users 80 --items 120 --new-items-per-day 10 --drift 0.05 \
        --labels --seed 3 --split-days "$1/stream" >/dev/null 2>&1 || return 1
    for w in $WORKLOADS; do
        for np in 1 2; do
            "$MPIRUN" --bind-to none -np $np "$FS" train $(wl_args $w "$1") train.log_every=1 \
                device.type=cpu output.metrics="$1/$w-cpu-$np.jsonl" >/dev/null 2>&1 || return 1
        done
    done
}

if [ "$MODE" = --refs ]; then
    refs "$OUTDIR" && echo "gpu-check: CPU references in $OUTDIR" && exit 0
    echo "gpu-check: the reference runs failed" >&2
    exit 1
fi

LOG=$OUTDIR/gpu-check.log
TABLE=$OUTDIR/table.txt
SANLOG=$OUTDIR/sanitizer.log
M=$W/metrics # the measured runs' metrics, packed into OUT/metrics.tar.gz
mkdir -p "$M"
rm -f "$OUTDIR/metrics.tar.gz" "$SANLOG"
: > "$LOG"
: > "$TABLE"
say() { echo "$*"; echo "$*" >> "$LOG"; }
# cut short (the lease's end): what was measured is packed, the table says so
trap 'table "gpu-check: cut short by a signal during stage $STAGE"; stage_end; exit 143' TERM INT
table() { say "$*"; echo "$*" >> "$TABLE"; }
say "gpu-check $MODE: $(date -u +%FT%TZ) on $(uname -n); deadline $SECONDS_ALL s; device $DEV"
cat "$W/env.out" >> "$LOG"
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ "$DEV" = fake ] && GPUS=1 # the fake device stands for one
CHECKS_OK=0 CHECKS_FAILED=0 FAILED_NAMES=

# --- stages ------------------------------------------------------------------------
# The stages in order with their shares of 480 (STAGES, at the end, runs
# them): a stage's budget is the time left to the deadline times its share
# over the shares still to run (SHARES_LEFT), so unused time passes on;
# each command runs under the time its stage has left.
STAGE= STAGE_END=0 STAGE_FAILS=0 STAGE_CUTS=0 CUT_OK=0 SHARES_LEFT=0
CHECKS_INCOMPLETE=0 INCOMPLETE_NAMES=
stage_end() {
    [ -n "$STAGE" ] || return 0
    if [ "$STAGE_FAILS" -gt 0 ]; then st="FAIL ($STAGE_FAILS)"
    elif [ "$STAGE_CUTS" -gt 0 ]; then st="INCOMPLETE ($STAGE_CUTS cut by the budget)"
    else st=PASS; fi
    table "stage $STAGE: $st ($(( $(date +%s) - STAGE_T0 )) s of $STAGE_BUDGET)"
    (cd "$W" && tar czf "$OUTDIR/metrics.tar.gz" metrics) 2>/dev/null
    STAGE=
}
stage() { # NAME SHARE_OF_480
    stage_end
    STAGE=$1 STAGE_FAILS=0 STAGE_CUTS=0 CUT_OK=0 FAIL_NEXT=0 CUT_NEXT=0
    [ "${GPU_CHECK_FAIL:-}" = "$1" ] && FAIL_NEXT=1
    [ "${GPU_CHECK_CUT:-}" = "$1" ] && CUT_NEXT=1
    STAGE_T0=$(date +%s)
    own=$(($2 * SECONDS_ALL / 480))
    if [ "$SHARES_LEFT" -gt 0 ]; then
        STAGE_BUDGET=$(( (DEADLINE - STAGE_T0) * $2 / SHARES_LEFT ))
        SHARES_LEFT=$((SHARES_LEFT - $2))
    else
        STAGE_BUDGET=$((DEADLINE - STAGE_T0))
    fi
    [ "$STAGE_BUDGET" -lt 0 ] && STAGE_BUDGET=0
    STAGE_END=$((STAGE_T0 + STAGE_BUDGET))
    [ "$STAGE_END" -gt "$DEADLINE" ] && STAGE_END=$DEADLINE
    more=$((STAGE_BUDGET - own))
    say "=== stage $1 (budget $STAGE_BUDGET s: its share $own s$([ $more -gt 0 ] &&
        echo " and $more s passed on"), $((DEADLINE - STAGE_T0)) s to the deadline)"
}
failed() { # NAME WHY
    CHECKS_FAILED=$((CHECKS_FAILED + 1)) STAGE_FAILS=$((STAGE_FAILS + 1))
    FAILED_NAMES="$FAILED_NAMES
  $STAGE: $1 ($2)"
    say "  FAIL $1 ($2)"
}
# incomplete NAME WHY: a run the stage allows to be cut (CUT_OK=1: the
# sanitizer's) ran out of its budget: reported, not a failure
incomplete() {
    CHECKS_INCOMPLETE=$((CHECKS_INCOMPLETE + 1)) STAGE_CUTS=$((STAGE_CUTS + 1))
    INCOMPLETE_NAMES="$INCOMPLETE_NAMES
  $STAGE: $1 ($2)"
    table "  incomplete $1 ($2)"
}
passed() { CHECKS_OK=$((CHECKS_OK + 1)); say "  ok   $1${2:+ ($2)}"; }
# check NAME CMD...: run CMD within the stage's time left; returns its status
# (77 with no GPU listed: a skip, 0). Its output goes to the log and
# $W/cmd.out; a failure's tail is shown, and its reason names the program's
# error line (a refusal's ASKED: WHY; use REMEDY) where it printed one.
check() {
    name=$1
    shift
    left=$((STAGE_END - $(date +%s)))
    if [ $left -lt 1 ]; then
        if [ "$CUT_OK" = 1 ]; then
            incomplete "$name" "not started: no time left in the stage"
        else
            failed "$name" "no time left in the stage"
        fi
        return 1
    fi
    echo "--- $name: $*" >> "$LOG"
    t0=$(date +%s)
    if [ "$FAIL_NEXT" = 1 ]; then # GPU_CHECK_FAIL: made to fail
        FAIL_NEXT=0
        echo "GPU_CHECK_FAIL=$STAGE: this check made to fail" > "$W/cmd.out"
        rc=1
    elif [ "$CUT_NEXT" = 1 ]; then # GPU_CHECK_CUT: as if cut by the budget
        CUT_NEXT=0
        echo "GPU_CHECK_CUT=$STAGE: this check taken as cut by the budget" > "$W/cmd.out"
        rc=124
    else
        timeout -k 5 "$left" "$@" > "$W/cmd.out" 2>&1
        rc=$?
    fi
    cat "$W/cmd.out" >> "$LOG"
    secs=$(( $(date +%s) - t0 ))
    if [ $rc -eq 77 ] && [ "$GPUS" -eq 0 ]; then
        say "  skip $name (no GPU listed)"
        return 0
    fi
    if [ $rc -eq 0 ]; then
        passed "$name" "$secs s"
        return 0
    fi
    why="exit $rc"
    if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
        why="cut at the stage's time, $secs s"
        if [ "$CUT_OK" = 1 ]; then
            incomplete "$name" "$why"
            return 1
        fi
    fi
    [ $rc -eq 77 ] && why="SKIP, but nvidia-smi lists $GPUS GPU(s)"
    err=$(grep -m 1 'freescale: error: ' "$W/cmd.out" | sed 's/.*freescale: error: //' | cut -c 1-240)
    [ -n "$err" ] && why="$why: $err"
    failed "$name" "$why"
    tail -n 6 "$W/cmd.out" | sed 's/^/       | /'
    return 1
}
# metric FILE FIELD: the median of FIELD over the train lines after the first
metric() {
    [ -f "$1" ] || { echo 0; return; }
    "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
v = [json.loads(l).get(sys.argv[2]) for l in open(sys.argv[1]) if '"event":"train"' in l]
v = sorted(x for x in v[1:] if isinstance(x, (int, float)))
print(v[(len(v) - 1) // 2] if v else 0)
PYEOF
}
# same NAME A B TOL [EVENT]: the losses of two metrics files' EVENT lines
# (default train: step by step; window: window by window) agree to TOL
# (relative); the worst difference goes into the table. Not run (no
# verdict) when a run it compares failed: that failure counted
same() {
    if [ ! -f "$2" ] || [ ! -f "$3" ]; then
        say "  skip $1 (a run it compares failed)"
        return 0
    fi
    if "$PY" - "$2" "$3" "$4" "${5:-train}" > "$W/same.out" 2>&1 <<'PYEOF'
import json, sys
ev = sys.argv[4]
def losses(p):
    return [(j['step'], j['loss']) for j in map(json.loads, open(p)) if j.get('event') == ev]
a, b, tol = losses(sys.argv[1]), losses(sys.argv[2]), float(sys.argv[3])
if not a or [s for s, _ in a] != [s for s, _ in b]:
    sys.exit('different %s lines: %d vs %d' % (ev, len(a), len(b)))
worst = max(abs(x - y) / max(abs(y), 1e-12) for (_, x), (_, y) in zip(a, b))
print('worst relative difference %.3g (tolerance %g)' % (worst, tol))
sys.exit(0 if worst <= tol else 'losses differ by %.3g (tolerance %g)' % (worst, tol))
PYEOF
    then
        passed "$1" "$(cat "$W/same.out")"
        echo "compare $1: $(cat "$W/same.out")" >> "$TABLE"
    else
        failed "$1" "$(tail -n 1 "$W/same.out")"
    fi
}
# row CONFIG METRICS: the table's line of a measured run
row() {
    f=$2
    [ -f "$f" ] || { table "$(printf '%-30s (no metrics: the run failed)' "$1")"; return; }
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
    table "$(printf '%-30s %10.0f %8s %6.0f%% %s %6.1f' "$1" "$tps" "$step" \
        "$(awk -v b="$busy" 'BEGIN { print 100 * b }')" "$ph" "$syncs")"
}

# --- env ---------------------------------------------------------------------------
stage_env() {
    say "  GPUs listed by nvidia-smi: $GPUS$(nvidia-smi -L 2>/dev/null | head -n 1 | sed 's/^/: /')"
    grep '^gpu-env:' "$W/env.out" > "$W/envlines"
    while read -r l; do say "  $l"; done < "$W/envlines"
    [ -n "$ENV_FAIL" ] && failed "CUDA libraries (scripts/gpu-env.sh)" "$(grep 'not found' "$W/env.out")"
    if check "freescale --version" "$FS" --version && ! grep -q "backends: .*$DEV" "$W/cmd.out"; then
        if [ "$GPUS" -gt 0 ]; then
            failed "backends" "this freescale has no $DEV backend"
        else
            say "  no $DEV backend and no GPU: the GPU tests will skip"
        fi
    fi
    for p in "$FS" "$TBO" "$TMB" "$TEI"; do
        if ldd "$p" 2>/dev/null | grep -q 'not found'; then
            failed "libraries of $(basename "$p")" "$(ldd "$p" | grep 'not found' | awk '{print $1}' | tr '\n' ' ')"
        fi
    done
    check "mpirun -np 2 (the bundle's launcher)" "$MPIRUN" --bind-to none -np 2 "$FS" --version
    if [ -n "$MPIRUN_CUDA" ]; then
        check "the second launcher (CUDA-aware Open MPI), -np 2" $MPIRUN_CUDA --bind-to none -np 2 \
            "$FS" --version
        check "its ompi_info: mpi_built_with_cuda_support true" sh -c '"$@" > "$0" 2>&1
            grep "mpi_built_with_cuda_support:value:" "$0"
            grep -q "mpi_built_with_cuda_support:value:true" "$0"' "$W/ompi_info.out" \
            env LD_LIBRARY_PATH="$OMPI_CUDA/lib" OPAL_PREFIX="$OMPI_CUDA" \
            "$OMPI_CUDA/bin/ompi_info" --parsable --all
    fi
    # the bundle's libraries reach its own programs alone (their RUNPATH):
    # the machine's python3 and compute-sanitizer load none of them
    say "  LD_LIBRARY_PATH: ${LD_LIBRARY_PATH:-not set}"
    if [ -n "${FREESCALE_PREBUILT:-}" ]; then
        # python3 with the modules that load shared libraries (zlib, ssl,
        # ctypes, ...): what it has mapped, from the bundle
        "$PY" -c 'import sys
for m in ("zlib", "bz2", "lzma", "ssl", "ctypes", "sqlite3", "json", "tarfile"):
    try:
        __import__(m)
    except ImportError:
        pass
print("".join(l for l in open("/proc/self/maps") if sys.argv[1] in l), end="")' \
            "$FREESCALE_PREBUILT/" > "$W/py.maps" 2>&1
        if [ -s "$W/py.maps" ]; then
            failed "python3 maps the bundle's libraries" "$(awk '{print $NF}' "$W/py.maps" | sort -u | head -n 3 | tr '\n' ' ')"
        else
            passed "python3 maps none of the bundle's libraries"
        fi
        for p in $(command -v compute-sanitizer); do
            if ldd "$p" 2>/dev/null | grep -q "$FREESCALE_PREBUILT/"; then
                failed "$p loads the bundle's libraries" "$(ldd "$p" | grep "$FREESCALE_PREBUILT/" | head -n 3 | tr '\n' ' ')"
            else
                passed "$p loads none of the bundle's libraries"
            fi
        done
    fi
}

# --- sanitizer: the kernels that never ran, under compute-sanitizer --------------------
stage_sanitizer() {
    SAN=$(command -v compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer \
        /usr/local/cuda*/compute-sanitizer/compute-sanitizer 2>/dev/null | head -n 1)
    CUT_OK=1 # a run cut by the budget: incomplete, not failed
    if [ "$DEV" != cuda ] || [ "$GPUS" -eq 0 ]; then
        say "  not run: no GPU (compute-sanitizer checks GPU kernels)"
        check "test_backend_ops $DEV (in place of the sanitizer)" "$TBO" "$DEV" \
            hstu_ctx,sasrec_ctx,full_blocks,softmax_loss_q,feat,gemm_bf16,emb_dyn,rows_match
    elif [ -z "$SAN" ]; then
        table "sanitizer: not run (no compute-sanitizer found)"
    else
        # memcheck over every op test whose kernels are new or rewritten; the
        # attention kernels under racecheck (shared memory hazards); each capped
        # at its share of the stage, the reports in OUT/sanitizer.log
        half=$(( (STAGE_END - $(date +%s)) * 2 / 3 ))
        STAGE_END_ALL=$STAGE_END
        STAGE_END=$(( $(date +%s) + half ))
        check "memcheck: new kernels" "$SAN" --tool memcheck --error-exitcode 86 \
            --log-file "$SANLOG.memcheck" "$TBO" cuda \
            hstu_ctx,sasrec_ctx,full_blocks,softmax_loss_q,feat,gemm_bf16,emb_engine,rows,softmax_loss,exchange_ops,emb_dyn,rows_match
        STAGE_END=$STAGE_END_ALL
        check "racecheck: attention kernels" "$SAN" --tool racecheck --error-exitcode 86 \
            --log-file "$SANLOG.racecheck" "$TBO" cuda hstu_attn,sasrec_attn,hstu_ctx,sasrec_ctx
        cat "$SANLOG.memcheck" "$SANLOG.racecheck" > "$SANLOG" 2>/dev/null
        rm -f "$SANLOG.memcheck" "$SANLOG.racecheck"
        table "sanitizer: $(grep -c 'ERROR SUMMARY: [1-9]\|Error: \|Race reported' "$SANLOG" 2>/dev/null) report line(s) in sanitizer.log"
    fi
}

# --- ops ---------------------------------------------------------------------------
stage_ops() {
    check "test_backend_ops (FREESCALE_CUDA_SYNC=1)" env FREESCALE_CUDA_SYNC=1 "$TBO" "$DEV"
    grep '^# ' "$W/cmd.out" | grep -v 'ok (' >> "$TABLE"
    # the dynamic tables' one-thread forms (cuda/dyn.cu; the parallel ones ran above)
    check "test_backend_ops emb_dyn (FREESCALE_CUDA_DYN_SERIAL=1)" \
        env FREESCALE_CUDA_DYN_SERIAL=1 "$TBO" "$DEV" emb_dyn
    check test_model_backends "$TMB" "$DEV"
}

# --- placement ---------------------------------------------------------------------
GPU="device.type=$DEV device.share=on parallel.transport=mpi"
TRAIN="$MPIRUN --bind-to none -np" # then NP "$FS" train ...
REFS=
# need_refs: REFS (the CPU references: carried, else computed now, in the
# time of the first stage that needs them) and DATA, tiny.in's dataset
need_refs() {
    [ -n "$REFS" ] && return 0
    REFS=${FREESCALE_REFS:-}
    if [ -z "$REFS" ] || [ ! -f "$REFS/tiny.h5" ]; then
        REFS=$W/ref
        mkdir -p "$REFS"
        say "  (no CPU references carried: computing them now)"
        check "CPU references" sh "$TOP/scripts/gpu-check.sh" --refs "$REFS"
    fi
    DATA=$REFS/tiny.h5
}
stage_placement() {
    need_refs
    for model in hstu sasrec; do
        for np in 1 2 4; do
            [ $model = sasrec ] && [ $np = 4 ] && continue
            check "$model P=$np device tables" $TRAIN $np "$FS" train "$TOP/input/tiny.in" \
                data.path="$DATA" $TINY model.type=$model $GPU embedding.placement=device \
                output.metrics="$M/$model-dev-$np.jsonl" &&
                same "$model P=$np: device tables vs the CPU" "$M/$model-dev-$np.jsonl" \
                    "$REFS/$model-cpu-$np.jsonl" 1e-3
            [ $np = 4 ] && continue
            check "$model P=$np host tables" $TRAIN $np "$FS" train "$TOP/input/tiny.in" \
                data.path="$DATA" $TINY model.type=$model $GPU embedding.placement=host \
                output.metrics="$M/$model-host-$np.jsonl" &&
                same "$model P=$np: device vs host tables, bit for bit" "$M/$model-dev-$np.jsonl" \
                    "$M/$model-host-$np.jsonl" 0
        done
    done
    check "hstu P=2 device tables, again" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" \
        data.path="$DATA" $TINY $GPU embedding.placement=device output.metrics="$M/hstu-dev-2b.jsonl" &&
        same "hstu P=2: a rerun repeats bit for bit" "$M/hstu-dev-2b.jsonl" "$M/hstu-dev-2.jsonl" 0
    # embedding.cache: host tables' rows cached on the device (the whole
    # shard: tiny.in's steps touch most of its 200 rows; the evictions are
    # tests/fake_cache.sh's), at prefetch filled a step ahead
    for ov in prioritized prefetch; do
        check "hstu P=2 cached host tables, overlap=$ov" $TRAIN 2 "$FS" train \
            "$TOP/input/tiny.in" data.path="$DATA" $TINY $GPU embedding.placement=host \
            embedding.cache=1.0 parallel.overlap=$ov output.metrics="$M/hstu-cache-$ov.jsonl" &&
            same "hstu P=2: cached vs host tables, overlap=$ov, bit for bit" \
                "$M/hstu-cache-$ov.jsonl" "$M/hstu-host-2.jsonl" 0
    done
}

# --- workloads -----------------------------------------------------------------------
# (a) ranking with features, bias, recency and factors, (b) retrieval over a
# dynamic item table, (c) a stream over window files with dynamic tables
# (input/gpu-W.in; wl_args): host and device tables against the CPU at
# 1e-3, device against host tables bit for bit; the stream's window lines
# too. A refusal (embedding.placement = device not available for one) is a
# failure that names the program's message.
stage_workloads() {
    need_refs
    for w in $WORKLOADS; do
        for np in 1 2; do
            ref=$REFS/$w-cpu-$np.jsonl
            if [ ! -f "$ref" ]; then
                failed "$w P=$np" "no CPU reference $ref (references of an older tree: gpu-bundle.sh again)"
                continue
            fi
            ran=
            for pl in host device; do
                f=$M/$w-$pl-$np.jsonl
                check "$w P=$np $pl tables" $TRAIN $np "$FS" train $(wl_args $w "$REFS") \
                    train.log_every=1 $GPU embedding.placement=$pl output.metrics="$f" || continue
                ran="$ran $pl"
                same "$w P=$np: $pl tables vs the CPU" "$f" "$ref" 1e-3
                [ $w = stream ] && same "$w P=$np: $pl tables vs the CPU, windows" "$f" "$ref" 1e-3 window
            done
            [ "$ran" = " host device" ] || continue
            same "$w P=$np: device vs host tables, bit for bit" "$M/$w-device-$np.jsonl" \
                "$M/$w-host-$np.jsonl" 0
            [ $w = stream ] && same "$w P=$np: device vs host tables, windows, bit for bit" \
                "$M/$w-device-$np.jsonl" "$M/$w-host-$np.jsonl" 0 window
        done
    done
}

# --- transports --------------------------------------------------------------------
stage_transports() {
    need_refs
    for tp in copy-engine kernel; do
        check "transport $tp" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" data.path="$DATA" $TINY \
            device.type=$DEV device.share=on embedding.placement=device parallel.transport=$tp \
            output.metrics="$M/tp-$tp.jsonl" &&
            same "transport $tp vs mpi" "$M/tp-$tp.jsonl" "$M/hstu-dev-2.jsonl" 1e-5
    done
    check "embedding transfers through CUDA IPC (test_emb_ipc, 4 ranks)" \
        env FREESCALE_TEST_DEVICE=$DEV $MPIRUN --bind-to none -np 4 "$TEI"
    stage_direct
    check "overlap=prefetch, device tables" $TRAIN 2 "$FS" train "$TOP/input/tiny.in" \
        data.path="$DATA" $TINY $GPU embedding.placement=device parallel.overlap=prefetch \
        output.metrics="$M/prefetch.jsonl" &&
        same "prefetch vs prioritized, device tables" "$M/prefetch.jsonl" "$M/hstu-dev-2.jsonl" 1e-5
}

# device.staging=direct (device buffers handed to MPI) against the staged
# runs of the placement and workloads stages, bit for bit (the same bytes
# exchanged in the same order): through the second launcher (the bundle's
# CUDA-aware Open MPI) where there is one, else the launcher. A refusal for
# want of a CUDA-aware MPI is reported, and a failure only where the
# second launcher runs on a GPU (it must be CUDA-aware there); the fake
# device acts CUDA-aware (FREESCALE_FAKE_AWARE=1) to run the direct path.
stage_direct() {
    if [ -n "$MPIRUN_CUDA" ]; then
        DTRAIN="$MPIRUN_CUDA --bind-to none -np" how="the CUDA-aware launcher $OMPI_CUDA/bin/orterun"
    else
        DTRAIN=$TRAIN how="the launcher (no CUDA-aware Open MPI carried)"
    fi
    [ "$DEV" = fake ] && export FREESCALE_FAKE_AWARE=1
    refuse_ok=1
    [ -n "$MPIRUN_CUDA" ] && [ "$DEV" = cuda ] && [ "$GPUS" -gt 0 ] && refuse_ok=0
    for dc in "hstu-dev-2 tiny hstu" "sasrec-dev-2 tiny sasrec" "hstu-dev-4 tiny hstu" \
        "dyn-device-2 dyn"; do
        set -- $dc
        ref=$M/$1.jsonl np=${1##*-}
        if [ $2 = tiny ]; then
            args="$TOP/input/tiny.in data.path=$DATA $TINY model.type=$3"
        else
            args="$(wl_args $2 "$REFS") train.log_every=1"
        fi
        # a refusal for want of a CUDA-aware MPI exits 0 where refuse_ok
        check "$1: staging=direct" sh -c 'ok=$1 out=$2; shift 2; "$@" > "$out" 2>&1; rc=$?
            cat "$out"; [ $rc -ne 0 ] && [ $ok = 1 ] && grep -q "is not CUDA-aware" "$out" && exit 0
            exit $rc' sh $refuse_ok "$W/direct.out" $DTRAIN $np "$FS" train $args $GPU \
            embedding.placement=device device.staging=direct output.metrics="$M/$1-direct.jsonl" ||
            continue
        if grep -q 'is not CUDA-aware' "$W/cmd.out"; then
            table "direct $1: refused, this MPI is not CUDA-aware ($how)"
            continue
        fi
        aware=$(grep -o -m 1 'CUDA-aware: [a-z]*' "$W/cmd.out")
        table "direct $1 through $how (MPI: ${aware:-CUDA-aware: not said}$([ "$DEV" = fake ] &&
            echo '; the fake device acts CUDA-aware'))"
        same "$1: staging=direct vs staged, bit for bit" "$M/$1-direct.jsonl" "$ref" 0
    done
    unset FREESCALE_FAKE_AWARE
}

# --- ctxloss: split_long, train.loss = full, in-batch negatives (2 ranks, host
# tables) against the CPU at 1e-3 (other summation orders than the CPU's, as
# tests/cuda_ctx_loss.sh); CPU references not carried are computed now
stage_ctxloss() {
    need_refs
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
            "$@" output.metrics="$M/$cl-dev-2.jsonl" &&
            same "$cl P=2: the GPU vs the CPU" "$M/$cl-dev-2.jsonl" "$ref" 1e-3
    done
}

# --- ml20m ---------------------------------------------------------------------------
# the measuring stages run one rank as MPI's singleton (no mpirun): they
# measure even when the launcher is broken
stage_ml20m() {
    check "ML-20M-shape data" "$FS" data gen --users 20000 --items 26744 \
        --length lognormal:4.4,1.1 --timestamps --seed 7 -o "$W/ml20m.h5"
    table "$HEAD"
    ml20m() { # NAME OVERRIDES...
        name=$1
        shift
        check "$name" "$FS" train "$TOP/input/ml20m-hstu.in" \
            data.path="$W/ml20m.h5" device.type=$DEV train.max_steps=$ML_STEPS \
            train.log_every=$((ML_STEPS / 4 > 0 ? ML_STEPS / 4 : 1)) \
            train.final_eval=off "$@"
    }
    # device tables first: the device figure always gets time
    ml20m "ML-20M device tables" embedding.placement=device output.metrics="$M/ml20m-dev.jsonl"
    row "ML-20M, 1 rank, device tables" "$M/ml20m-dev.jsonl"
    ml20m "ML-20M host tables" embedding.placement=host output.metrics="$M/ml20m-host.jsonl"
    row "ML-20M, 1 rank, host tables" "$M/ml20m-host.jsonl"
    same "ML-20M: device vs host tables, bit for bit" "$M/ml20m-dev.jsonl" "$M/ml20m-host.jsonl" 0
    h=$(metric "$M/ml20m-host.jsonl" tokens_per_s) d=$(metric "$M/ml20m-dev.jsonl" tokens_per_s)
    table "$(awk -v h="$h" -v d="$d" 'BEGIN { printf "device / host tables: %.2fx tokens/s (the aim: >= 5x)", (h > 0 ? d / h : 0) }')"
}

# --- precision -------------------------------------------------------------------------
# device.precision at the ML-20M configuration (host tables; fp32: the run
# above): tokens/s, MFU against the run's own measured gemm peak (the
# peak's column), the losses of tf32 and bf16 within 1e-2 and 3e-2 of
# fp32's (relative, step by step), bf16 / tf32 tokens/s (the aim: >= 1.5x)
stage_precision() {
    for pr in tf32 bf16; do
        ml20m "ML-20M $pr" embedding.placement=host device.precision=$pr \
            output.metrics="$M/ml20m-$pr.jsonl"
    done
    table "$(printf '%-30s %10s %7s %12s' precision tokens/s mfu peak_gflops)"
    for pr in fp32 tf32 bf16; do
        f=$M/ml20m-$pr.jsonl
        [ $pr = fp32 ] && f=$M/ml20m-host.jsonl
        table "$(printf '%-30s %10.0f %6.1f%% %12.0f' "ML-20M, 1 rank, $pr" "$(metric "$f" tokens_per_s)" \
            "$(awk -v m="$(metric "$f" mfu)" 'BEGIN { print 100 * m }')" "$(metric "$f" peak_gflops)")"
    done
    for pr in tf32:1e-2 bf16:3e-2; do
        p=${pr%%:*}
        same "ML-20M: $p vs fp32 losses" "$M/ml20m-$p.jsonl" "$M/ml20m-host.jsonl" "${pr#*:}"
    done
    t=$(metric "$M/ml20m-tf32.jsonl" tokens_per_s) b=$(metric "$M/ml20m-bf16.jsonl" tokens_per_s)
    table "$(awk -v t="$t" -v b="$b" 'BEGIN { printf "bf16 / tf32: %.2fx tokens/s (the aim: >= 1.5x)", (t > 0 ? b / t : 0) }')"
}

# --- heavy ---------------------------------------------------------------------------
stage_heavy() {
    table "$HEAD"
    check "heavy data ($HEAVY_ITEMS items)" "$FS" data gen --users 20000 --items "$HEAVY_ITEMS" \
        --length lognormal:4.4,1.1 --zipf 0.8 --seed 9 -o "$W/heavy.h5"
    for pl in device host; do # device tables first
        check "heavy, $pl tables" "$FS" train \
            "$TOP/input/ml20m-hstu.in" data.path="$W/heavy.h5" device.type=$DEV model.dim=128 \
            model.layers=1 embedding.placement=$pl train.max_steps=$ML_STEPS \
            train.log_every=$((ML_STEPS / 4 > 0 ? ML_STEPS / 4 : 1)) \
            train.final_eval=off output.metrics="$M/heavy-$pl.jsonl"
        row "heavy ($HEAVY_ITEMS rows), $pl" "$M/heavy-$pl.jsonl"
        table "$(awk -v t="$(metric "$M/heavy-$pl.jsonl" tokens_per_s)" -v p=$pl \
            'BEGIN { printf "heavy, %s tables: %.0f looked-up rows/s (130 per token)", p, 130 * t }')"
    done
}

# --- the run -------------------------------------------------------------------------
HEAD="$(printf '%-30s %10s %8s %7s %7s %7s %7s %7s %6s' config tokens/s step_ms busy fwd_ms \
    bwd_ms xchg_ms opt_ms syncs)"
STAGES="env:10 sanitizer:55 ops:50 placement:55 workloads:55 transports:45 ctxloss:30 ml20m:80
    precision:50 heavy:50"
RUN=
for s_ in $STAGES; do
    case " ${GPU_CHECK_STAGES:-${s_%%:*}} " in
        *" ${s_%%:*} "*) RUN="$RUN $s_" SHARES_LEFT=$((SHARES_LEFT + ${s_#*:})) ;;
    esac
done
[ -n "$RUN" ] || { table "gpu-check: GPU_CHECK_STAGES='${GPU_CHECK_STAGES:-}' names no stage of: $STAGES"; exit 2; }
for s_ in $RUN; do
    stage "${s_%%:*}" "${s_#*:}"
    "stage_${s_%%:*}"
done

if [ "$MODE" = --full ]; then
    DEADLINE=$((DEADLINE + ${GPU_CHECK_FULL_SECONDS:-1800}))
    SECONDS_ALL=$((SECONDS_ALL + ${GPU_CHECK_FULL_SECONDS:-1800}))
    stage tests 0
    STAGE_END=$DEADLINE STAGE_BUDGET=$((DEADLINE - STAGE_T0))
    export FREESCALE="$FS" TOP_SRCDIR="$TOP" MPIRUN
    for t in cuda_train cuda_placement cuda_ctx_loss cli_device cli_overlap cuda_feat; do
        check "$t" sh "tests/$t.sh"
    done
    check bench_gpu env FREESCALE="$FS" BENCH_GEMM="$BENCH_GEMM" PY="$PY" sh bench/bench_gpu.sh 60
    cat "$W/cmd.out" >> "$TABLE"
fi
stage_end
cut=
[ "$CHECKS_INCOMPLETE" -gt 0 ] && cut=", $CHECKS_INCOMPLETE incomplete (cut by the budget)"
if [ "$CHECKS_FAILED" -eq 0 ]; then
    table "gpu-check: PASS, $CHECKS_OK checks passed$cut in $(( $(date +%s) - START )) s${cut:+:$INCOMPLETE_NAMES}"
    exit 0
fi
table "gpu-check: FAIL, $CHECKS_OK checks passed$cut, $CHECKS_FAILED failed in $(( $(date +%s) - START )) s:$FAILED_NAMES${cut:+
 incomplete:$INCOMPLETE_NAMES}"
exit 1
