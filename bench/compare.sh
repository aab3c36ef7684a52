#!/usr/bin/env bash
# compare: this tree's build against git revision REV, interleaved, on the
# same data, for HSTU and SASRec.
#
#   bench/compare.sh REV [section.key=value ...]
#   bench/compare.sh REV --matrix [section.key=value ...]
#
# REV is any commit, tag or expression (HEAD~1, 23a9d5f, main). It is
# exported with `git archive` into a scratch folder and built there
# (autoreconf, configure, make; the build is kept per commit under
# ${COMPARE_CACHE:-${TMPDIR:-/tmp}/freescale-compare} and reused). This
# tree's ./freescale must be built (the script runs make first).
#
# Each build writes its own dataset with its own `data gen` (data of
# ML-1M's shape, as bench/bench_train.sh makes it), so that format changes
# do not matter, unless COMPARE_DATA=FILE.h5 names one dataset for both.
# Then, per model, one warm-up run of each build, and COMPARE_RUNS (default
# 5) pairs of runs A B A B ... (A = this tree, B = REV): one epoch each
# (train.max_steps = the epoch's steps; no evaluation), on COMPARE_NP
# (default 2) ranks, with each tree's own input/ml1m-{hstu,sasrec}.in and
# the overrides given on the command line.
#
# It prints, per model: the median wall seconds of one epoch (the whole
# process) of each build, the ratio A/B pair by pair (median, min, max),
# the per-phase medians (ms per step, from the metrics file, the first
# progress interval of each run left out) side by side with their ratio,
# and whether the losses of the two builds are identical (the listing of
# every progress line's loss; else the largest relative difference).
# COMPARE_MODELS (default "hstu sasrec") picks the models, COMPARE_STEPS
# the number of steps (default: one epoch of 6040 users / batch 128 = 48).
#
# --matrix: the same interleaved A/B over short runs of many
# configurations that together take every path the tests exercise (the
# list: matrix_configs below): HSTU and SASRec; sampled softmax, full
# softmax, BCE, in-batch and mixed negatives; overlap none, prioritized,
# prefetch; item, user and event features and ranking (a second dataset of
# ML-1M's shape with features and an event column); split_long; bf16 row
# and gradient codecs; an embedding group; the fake device with device
# tables; device.precision = bf16. Per configuration one warm-up run of each
# build and MATRIX_RUNS (default 3) pairs of MATRIX_STEPS (default 16)
# steps, train.batch_size = 128; the time of a run is that of its progress
# intervals after the first (train.log_every = 4: 12 steps), from the
# metrics' samples_per_s, so that start-up (MPI, data, the peak gemm) does
# not dilute it; the wall seconds of the whole process are shown beside.
# It prints a table: ms per step of each build (medians), the ratio A/B
# pair by pair (median, min, max), the wall ratio, the losses (identical,
# or the largest relative difference), and SLOWER where the median step
# ratio exceeds 1.05; a configuration REV cannot run (a parameter or
# feature it does not have) is listed as such. MATRIX_ONLY=name,name runs
# a subset. Exit status 1 when a configuration of A fails or its losses
# differ from B's.
set -uo pipefail
REV=${1:?usage: bench/compare.sh REV [--matrix] [section.key=value ...]}
shift
MATRIX=0
if [ "${1:-}" = --matrix ]; then
    MATRIX=1
    shift
fi
TOP=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${COMPARE_RUNS:-5}
NP=${COMPARE_NP:-2}
STEPS=${COMPARE_STEPS:-48}
MODELS=${COMPARE_MODELS:-hstu sasrec}
CACHE=${COMPARE_CACHE:-${TMPDIR:-/tmp}/freescale-compare}
PY=/usr/bin/python3
die() { echo "compare: $*" >&2; exit 1; }

[ -x "$PY" ] || die "needs $PY (Debian's python3)"
HASH=$(git -C "$TOP" rev-parse --verify -q "$REV^{commit}") || die "$REV: not a git revision"
make -C "$TOP" -s freescale >/dev/null || die "this tree does not build (make in $TOP)"
A_FS=$TOP/freescale

# --- REV's build, cached per commit -------------------------------------------
B_DIR=$CACHE/$HASH
if [ ! -x "$B_DIR/freescale" ]; then
    echo "compare: building $REV (${HASH:0:10}) in $B_DIR"
    rm -rf "$B_DIR" && mkdir -p "$B_DIR" || die "cannot create $B_DIR"
    git -C "$TOP" archive "$HASH" | tar -x -C "$B_DIR" || die "git archive $HASH failed"
    (cd "$B_DIR" && autoreconf -fi && ./configure && make -j"$(nproc)" freescale) \
        >"$B_DIR.log" 2>&1 || { tail -n 30 "$B_DIR.log"; rm -rf "$B_DIR"; die "build of $REV failed (log: $B_DIR.log)"; }
fi
B_FS=$B_DIR/freescale

W=$(mktemp -d "${TMPDIR:-/tmp}/compare.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none

gen() { # FS OUT
    if [ -n "${COMPARE_DATA:-}" ]; then
        ln -s "$(realpath "$COMPARE_DATA")" "$2"
    else
        "$1" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps \
            --seed 3 -o "$2" >/dev/null
    fi
}
gen "$A_FS" "$W/a.h5" || die "data gen of this tree failed"
gen "$B_FS" "$W/b.h5" || die "data gen of $REV failed"

# one training run: SIDE MODEL TAG DATA STEPS OVERRIDES... ->
# $W/SIDE-MODEL-TAG.{log,jsonl,wall}; status 1 when it failed
run_one() {
    local side=$1 model=$2 tag=$3 data=$4 steps=$5 fs dir
    shift 5
    if [ "$side" = a ]; then fs=$A_FS dir=$TOP; else fs=$B_FS dir=$B_DIR; fi
    local base=$W/$side-$model-$tag
    local t0 t1
    t0=$(date +%s.%N)
    mpirun -np "$NP" "$fs" train "$dir/input/ml1m-$model.in" data.path="$data" \
        train.max_steps="$steps" train.epochs=1 train.final_eval=off train.log_every=4 \
        output.metrics="$base.jsonl" "$@" </dev/null >"$base.log" 2>&1 || return 1
    t1=$(date +%s.%N)
    echo "$t0 $t1" | awk '{ printf "%.4f\n", $2 - $1 }' >"$base.wall"
}

run() { # SIDE MODEL TAG OVERRIDES...: a run of the default mode, which must not fail
    local side=$1 model=$2 tag=$3
    shift 3
    run_one "$side" "$model" "$tag" "$W/$side.h5" "$STEPS" "$@" ||
        { tail -n 20 "$W/$side-$model-$tag.log"; die "run $side $model $tag failed"; }
}

echo "compare: A = this tree ($(git -C "$TOP" describe --always --dirty)), B = $REV (${HASH:0:10})"
if [ "$MATRIX" = 1 ]; then
    . "$TOP/bench/compare_matrix.sh"
    exit $?
fi
echo "compare: $NP ranks, $STEPS steps per run, $RUNS pairs after a warm-up, $(nproc) CPUs, $(date -u +%F)"
[ $# -gt 0 ] && echo "compare: overrides: $*"

for model in $MODELS; do
    [ -f "$TOP/input/ml1m-$model.in" ] || die "no input/ml1m-$model.in"
    echo "compare: $model: warm-up"
    run a "$model" warm "$@"
    run b "$model" warm "$@"
    for i in $(seq 1 "$RUNS"); do
        run a "$model" "$i" "$@"
        run b "$model" "$i" "$@"
        printf 'compare: %s: pair %d: A %.2f s, B %.2f s\n' "$model" "$i" \
            "$(cat "$W/a-$model-$i.wall")" "$(cat "$W/b-$model-$i.wall")"
    done
done

"$PY" - "$W" "$RUNS" "$MODELS" <<'PYEOF'
import json, os, statistics, sys
w, runs, models = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()

def events(path):
    out = []
    with open(path) as f:
        for line in f:
            try:
                e = json.loads(line)
            except ValueError:
                continue
            if e.get("event") == "train":
                out.append(e)
    return out

def med(v):
    return statistics.median(v) if v else float("nan")

status = 0
for m in models:
    wall = {s: [float(open(f"{w}/{s}-{m}-{i}.wall").read()) for i in range(1, runs + 1)]
            for s in "ab"}
    ratio = [a / b for a, b in zip(wall["a"], wall["b"])]
    print(f"\n{m}: seconds per epoch (whole process, median of {runs})")
    print(f"  A (this tree) {med(wall['a']):8.3f}   B (REV) {med(wall['b']):8.3f}   "
          f"A/B pair by pair: median {med(ratio):.3f}  min {min(ratio):.3f}  max {max(ratio):.3f}")
    # per-phase medians over the progress intervals, the first of each run left out
    ph = {s: {} for s in "ab"}
    for s in "ab":
        for i in range(1, runs + 1):
            for e in events(f"{w}/{s}-{m}-{i}.jsonl")[1:]:
                for k, v in e.items():
                    if k.endswith("_ms") and isinstance(v, (int, float)):
                        ph[s].setdefault(k[:-3], []).append(v)
    keys = [k for k in ph["a"] if k in ph["b"]] + [k for k in ph["a"] if k not in ph["b"]] + \
           [k for k in ph["b"] if k not in ph["a"]]
    print(f"  {'phase (ms/step)':<18} {'A':>9} {'B':>9} {'A/B':>7}")
    for k in keys:
        a, b = med(ph["a"].get(k, [])), med(ph["b"].get(k, []))
        r = f"{a / b:7.2f}" if a == a and b == b and b > 0 else "      -"
        fa = f"{a:9.2f}" if a == a else "        -"
        fb = f"{b:9.2f}" if b == b else "        -"
        print(f"  {k:<18} {fa} {fb} {r}")
    for k in ("gflops", "mfu"):
        v = [e[k] for i in range(1, runs + 1) for e in events(f"{w}/a-{m}-{i}.jsonl")[1:] if k in e]
        if v:
            print(f"  {k} (A, median): {med(v):.4g}")
    # losses: every run of both builds
    la = [[e["step"], e["loss"]] for e in events(f"{w}/a-{m}-1.jsonl")]
    lb = [[e["step"], e["loss"]] for e in events(f"{w}/b-{m}-1.jsonl")]
    if la == lb:
        print(f"  losses: identical ({len(la)} progress lines, last {la[-1][1] if la else '-'})")
    elif [s for s, _ in la] != [s for s, _ in lb]:
        print("  losses: the builds logged different steps")
        status = 1
    else:
        d = max(abs(x[1] - y[1]) / max(abs(y[1]), 1e-30) for x, y in zip(la, lb))
        print(f"  losses: DIFFER, largest relative difference {d:.3g} "
              f"(last A {la[-1][1]}, B {lb[-1][1]})")
sys.exit(status)
PYEOF
