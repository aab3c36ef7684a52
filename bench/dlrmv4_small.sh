#!/bin/sh
# bench/dlrmv4_small.sh: input/dlrmv4-small.in (MLPerf DLRMv4's recipe at a
# small size, doc/dlrmv4.md) on Yambda-shaped streams of several seeds:
# per seed, data gen --yambda (30 days, 2000 users, 4000 tracks, median 300
# events) with that seed, the stream trained test-then-train on NP ranks,
# and the next-day AUC of its last window (the generator's test day)
# against the online user+item baseline's on the same events and against
# the data's planted optimum (its planted_auc attribute); also the mean
# over the windows, the wall seconds; then the median, min and max over
# the seeds. The parameters were set on seed 1: seeds 2 and 3 are data
# they were not tuned on. Nothing is asserted.
#
# usage: bench/dlrmv4_small.sh [--seeds N]   (seeds 1 .. N, default 3)
# environment: FREESCALE (the program), NP (ranks, 2), ARGS (extra
# parameter overrides, e.g. ARGS="model.dim=64").
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
SEEDS="1 2 3"
if [ "${1:-}" = "--seeds" ]; then
    [ -n "${2:-}" ] && [ "$2" -ge 1 ] 2>/dev/null || { echo "dlrmv4_small.sh: --seeds N (N >= 1)" >&2; exit 2; }
    SEEDS=$(seq 1 "$2")
    shift 2
fi
[ $# -eq 0 ] || { echo "usage: bench/dlrmv4_small.sh [--seeds N]" >&2; exit 2; }
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "dlrmv4_small.sh: set FREESCALE to the program" >&2; exit 2; }
NP=${NP:-2} ARGS=${ARGS:-}
PY=/usr/bin/python3
"$PY" -c 'import h5py' 2>/dev/null || { echo "dlrmv4_small.sh: skipped: $PY cannot import h5py"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-dlrmv4.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up

printf '# input/dlrmv4-small.in, %s ranks, seeds %s%s\n' "$NP" "$(echo $SEEDS)" "${ARGS:+, $ARGS}"
printf '| seed | optimum AUC | model AUC | gap | baseline AUC | model - baseline | mean model | mean baseline | s |\n'
printf '|---|---|---|---|---|---|---|---|---|\n'
: > "$W/rows"
for seed in $SEEDS; do
    d="$W/y$seed.h5"
    "$FS" data gen --yambda --days 30 --users 2000 --tracks 4000 --median-length 300 \
        --seed "$seed" -o "$d" > /dev/null
    t0=$(date +%s.%N)
    # shellcheck disable=SC2086
    mpirun -np "$NP" "$FS" train "$here/input/dlrmv4-small.in" "data.path=$d" \
        "output.metrics=$W/m$seed.jsonl" $ARGS > "$W/r$seed.log" 2>&1 ||
        { echo "dlrmv4_small.sh: seed $seed failed:" >&2; tail -n 5 "$W/r$seed.log" >&2; exit 1; }
    s=$(echo "$(date +%s.%N) - $t0" | bc)
    "$PY" - "$d" "$W/m$seed.jsonl" "$seed" "$s" >> "$W/rows" <<'EOF'
import json, sys, h5py
d, m, seed, s = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
opt = float(h5py.File(d, "r").attrs["planted_auc"])
w = [o for o in map(json.loads, open(m)) if o.get("event") == "window"]
a, b = w[-1]["listen_plus.auc"], w[-1]["baseline.listen_plus.auc"]
ma = sum(o["listen_plus.auc"] for o in w) / len(w)
mb = sum(o["baseline.listen_plus.auc"] for o in w) / len(w)
print(seed, opt, a, a - opt, b, a - b, ma, mb, s)
EOF
    awk '{ printf "| %s | %.4f | %.4f | %+.4f | %.4f | %+.4f | %.4f | %.4f | %.0f |\n", $1, $2, $3, $4, $5, $6, $7, $8, $9 }' \
        "$W/rows" | tail -n 1
done
for stat in median min max; do
    printf '| %s |' "$stat"
    for c in 2 3 4 5 6 7 8 9; do
        sort -g -k$c,$c "$W/rows" | awk -v c=$c -v st=$stat '{ v[NR] = $c }
            END { x = st == "min" ? v[1] : st == "max" ? v[NR] : NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
                  printf (c == 9 ? " %.0f |" : c == 4 || c == 6 ? " %+.4f |" : " %.4f |"), x }'
    done
    echo
done
