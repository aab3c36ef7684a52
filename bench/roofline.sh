#!/bin/sh
# roofline: where the time of the ML-1M configurations' training step goes
# against what it could reach (doc/benchmarks.md, "The roofline"). One
# command, out of the box:
#
#   bench/roofline.sh [STEPS]        (default 32 steps; ~1 minute on 2 idle cores)
#
# On data of ML-1M's shape (bench/bench_train.sh's: 6040 users, 3416 items,
# lognormal lengths), 2 ranks, for SASRec (input/ml1m-sasrec.in) and HSTU
# (input/ml1m-hstu.in): each rank runs under `perf record` (cpu-clock
# samples with DWARF call chains, ~150 MB a rank in TMPDIR), then bench/bench_roofline measures on one core, in the same
# invocation, the stream bandwidth and the sgemm rates at the step's shapes,
# and bench/roofline.py prints per kernel class its FLOPs and bytes counted
# from the shapes, its measured CPU ms a step (perf's samples attributed by
# their call chains to the functions of its source files), its bound (max of FLOPs / the sgemm
# rate at its shape, bytes / the bandwidth) and per phase group the measured
# wall time against its bound; the step's sum of bounds and the MFU it
# implies beside the progress line's. The header says the date, the CPU, the
# BLAS kernels and the load. Needs perf (linux-perf) with
# /proc/sys/kernel/perf_event_paranoid <= 2; never asserts on time.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
BR=$TOP/bench/bench_roofline
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
[ -x "$FS" ] || { echo "roofline: $FS not built (make)"; exit 1; }
[ -x "$BR" ] || { echo "roofline: $BR not built (make bench/bench_roofline)"; exit 1; }
command -v perf >/dev/null 2>&1 || { echo "roofline: perf not found (apt-get install linux-perf)"; exit 1; }
STEPS=${1:-32}
case $STEPS in ''|*[!0-9]*) echo "roofline: STEPS '$STEPS' is not a number of steps"; exit 2 ;; esac
[ "$STEPS" -ge 8 ] || { echo "roofline: STEPS $STEPS: give >= 8 (two progress intervals of 4)"; exit 2; }
W=$(mktemp -d "${TMPDIR:-/tmp}/roofline.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1

"$FS" data gen --users 6040 --items 3416 --length lognormal:4.6,1.0 --timestamps --seed 3 \
    -o "$W/ml1m-shape.h5" >/dev/null || exit 1
echo "roofline: $(date -u '+%F %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)," \
    "$(nproc) CPUs; load average $(cut -d' ' -f1-3 /proc/loadavg); data: ML-1M shape, 2 ranks," \
    "$STEPS steps"

run() { # NAME INPUT
    name=$1 in=$2
    rm -f "$W"/m.jsonl "$W"/perf.* "$W"/prof.*
    "${MPIRUN:-mpirun}" -np 2 sh -c 'exec perf record -q -F 499 --call-graph dwarf,65528 \
        -o "$0/perf.$OMPI_COMM_WORLD_RANK" -- "$@"' \
        "$W" "$FS" train "$TOP/input/$in" data.path="$W/ml1m-shape.h5" train.max_steps="$STEPS" \
        train.log_every=4 train.final_eval=off output.metrics="$W/m.jsonl" > "$W/log" 2>&1 ||
        { echo "roofline: $name failed:"; tail -n 20 "$W/log"; return 1; }
    for r in 0 1; do
        perf script -i "$W/perf.$r" -F time,period,ip,sym,dso > "$W/prof.$r" 2>"$W/perf.err" ||
            { echo "roofline: perf script of rank $r:"; cat "$W/perf.err"; return 1; }
        rm -f "$W/perf.$r"
    done
    shapes=$("$PY" "$TOP/bench/roofline.py" --shapes "$W/m.jsonl") || return 1
    # shellcheck disable=SC2086 # the shapes are words
    "$BR" $shapes > "$W/rates" || { echo "roofline: bench_roofline failed"; return 1; }
    "$PY" "$TOP/bench/roofline.py" --metrics "$W/m.jsonl" --rates "$W/rates" --src "$TOP" \
        --label "$name ($in)" "$W/prof.0" "$W/prof.1"
}
rc=0
run sasrec ml1m-sasrec.in || rc=1
echo
run hstu ml1m-hstu.in || rc=1
exit $rc
