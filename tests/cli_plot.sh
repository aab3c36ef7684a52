#!/bin/sh
# cli_plot: scripts/plot makes valid PNG files from a real metrics file (a
# short 'freescale train' run with evaluations), from stream runs' window
# lines (one run's windows, and --windows comparing two), from a 3-row sweep CSV made
# by scripts/collect over hand-made run directories, and from plan CSVs (one
# written by hand, and one by 'freescale plan' when it is there); it refuses
# clearly without gnuplot and on a file it does not know. Skips (77) when
# gnuplot or python3 is missing (it installs nothing).
. "$(dirname "$0")/lib.sh"
PLOT="$TOP_SRCDIR/scripts/plot"
COLLECT="$TOP_SRCDIR/scripts/collect"
if ! command -v gnuplot >/dev/null 2>&1; then
    echo "SKIP: gnuplot not installed (Debian: apt-get install gnuplot-nox)"
    exit 77
fi
if ! command -v python3 >/dev/null 2>&1; then
    echo "SKIP: python3 not found"
    exit 77
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none OPENBLAS_NUM_THREADS=1
cd "$T" || exit 1

# is_png FILE: exists, starts with the PNG signature and an IHDR chunk of a
# non-empty image
is_png() {
    [ -s "$1" ] || return 1
    [ "$(od -An -tx1 -N16 "$1" | tr -d ' \n')" = "89504e470d0a1a0a0000000d49484452" ] || return 1
    w=$(od -An -tu1 -j16 -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
    h=$(od -An -tu1 -j20 -N4 "$1" | awk '{ print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4 }')
    [ "$w" -gt 100 ] && [ "$h" -gt 100 ]
}
check_pngs() {
    for f in "$@"; do
        if is_png "$f"; then pass "$(basename "$f") is a ${w}x${h} PNG ($(wc -c <"$f") bytes)"
        else fail "$f is not a valid PNG: $(ls -l "$f" 2>&1; od -An -c -N16 "$f" 2>&1)"; fi
    done
}

# --- a real metrics file ------------------------------------------------------
tiny_data
timeout 300 "$FS" train "$TOP_SRCDIR/input/tiny.in" data.path=tiny.h5 train.epochs=20 \
    train.eval_every=2 train.log_every=2 output.metrics=m.jsonl >train.log 2>&1 ||
    { fail "train: $(tail -n 5 train.log)"; finish; }
expect_ok timeout 300 "$PLOT" -o png m.jsonl
check_pngs png/m-loss.png png/m-quality.png png/m-throughput.png
[ "$(wc -l <"$T/out")" -ge 3 ] && pass "plot printed the PNG names" || fail "plot output: $(cat "$T/out")"
if grep -q '"bubble"' m.jsonl; then
    check_pngs png/m-bubble.png
else
    [ ! -e png/m-bubble.png ] && pass "no bubble key, no bubble plot" || fail "bubble plot without data"
fi
# next to the file when there is no -o; a resumed run's repeated step is fine
cp m.jsonl again.jsonl && grep '"event":"train"' m.jsonl | head -n 3 >>again.jsonl
expect_ok timeout 300 "$PLOT" again.jsonl
check_pngs again-loss.png

# --- stream runs' windows (train.schedule = stream) ---------------------------
for lr in 1e-3 3e-3; do
    timeout 300 "$FS" train "$TOP_SRCDIR/input/tiny.in" data.path=tiny.h5 train.schedule=stream \
        data.window=2d train.lr=$lr output.metrics=s$lr.jsonl >s$lr.log 2>&1 ||
        fail "stream run lr $lr: $(tail -n 5 s$lr.log)"
done
expect_ok timeout 300 "$PLOT" -o png s1e-3.jsonl
check_pngs png/s1e-3-windows.png
expect_ok timeout 300 "$PLOT" --windows -o cmp s1e-3.jsonl s3e-3.jsonl
check_pngs cmp/windows-hr@10.png cmp/windows-ndcg@10.png
expect_error "m.jsonl: no window lines" "$PLOT" --windows -o cmp s1e-3.jsonl m.jsonl

# --- a sweep CSV from scripts/collect ----------------------------------------
for i in 1 2 3; do
    mkdir -p sweep/00$i
    echo "train.lr=${i}e-3" >sweep/00$i/experiment
    timeout 300 "$FS" train "$TOP_SRCDIR/input/tiny.in" data.path=tiny.h5 train.epochs=2 \
        train.lr=${i}e-3 output.metrics=sweep/00$i/metrics.jsonl >/dev/null 2>&1 || fail "sweep run $i"
done
expect_ok timeout 300 "$COLLECT" -o sweep.csv sweep
[ "$(wc -l <sweep.csv)" = 4 ] && pass "sweep.csv: header and 3 rows" || fail "sweep.csv: $(cat sweep.csv)"
expect_ok timeout 300 "$PLOT" -o png sweep.csv
check_pngs png/sweep.png

# --- plan CSVs ----------------------------------------------------------------
cat >plan.csv <<'EOF'
ranks,mode,bubble,imbalance,reduction
1,none,0,1,0
2,none,0.12,1.14,0
4,none,0.21,1.27,0
8,none,0.30,1.43,0
1,lpt,0,1,0
2,lpt,0.01,1.01,0.92
4,lpt,0.02,1.02,0.90
8,lpt,0.03,1.03,0.90
EOF
expect_ok timeout 300 "$PLOT" -o png plan.csv
check_pngs png/plan.png
if "$FS" plan "$TOP_SRCDIR/input/tiny.in" data.path=tiny.h5 --batch-per-rank 8 --ranks 1,2,4 \
    --csv real-plan.csv >plan.log 2>&1; then
    expect_ok timeout 300 "$PLOT" -o png real-plan.csv
    check_pngs png/real-plan.png
else
    echo "note: 'freescale plan' not available here, hand-written plan CSV only"
fi

# --- refusals -----------------------------------------------------------------
echo "a,b,c" >other.csv
expect_error "neither a metrics file" "$PLOT" other.csv
mkdir nobin
PYEXE=$(python3 -c "import sys; print(sys.executable)")
expect_error "gnuplot-nox" env PATH="$T/nobin" "$PYEXE" "$PLOT" m.jsonl
finish
