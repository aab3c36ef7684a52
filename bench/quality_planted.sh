#!/bin/sh
# bench/quality_planted.sh: the planted table of doc/quality.md: the
# ranking trainer against the known optimum of planted data (doc/ranking.md,
# "A planted dataset"). For each seed: data gen --labels planted:K with that
# seed, then input/planted-rank.in (model.bias, model.factors = 4) and the
# same without the factor terms (model.factors = 0, the baseline); per run
# the test click AUC, NE and rating MSE, their gaps to the optimum of what
# the evaluation shows (planted_visible_*, the file's attributes), and the
# wall seconds; then per column the median, min, max and standard deviation
# (population) over the seeds, and the true-probability optimum's median
# (planted_auc/ne/mse: the previous item of every test event shown). The
# bar is a gap above -0.01 AUC and below +0.02 NE; nothing is asserted.
#
# usage: bench/quality_planted.sh [--seeds N]   (seeds 1 .. N, default 3)
# environment: FREESCALE (the program), NP (ranks, 2), USERS (2400),
# LENGTH (events a user, 600), K (test events a user, 4), ARGS (extra
# parameter overrides for both runs, e.g. ARGS="train.epochs=12").
set -eu
here=$(cd "$(dirname "$0")/.." && pwd)
SEEDS="1 2 3"
if [ "${1:-}" = "--seeds" ]; then
    [ -n "${2:-}" ] && [ "$2" -ge 1 ] 2>/dev/null || { echo "quality_planted.sh: --seeds N (N >= 1)" >&2; exit 2; }
    SEEDS=$(seq 1 "$2")
    shift 2
fi
[ $# -eq 0 ] || { echo "usage: bench/quality_planted.sh [--seeds N]" >&2; exit 2; }
FS=${FREESCALE:-}
if [ -z "$FS" ]; then
    for f in ./freescale "$here/freescale"; do [ -x "$f" ] && FS=$f && break; done
fi
[ -n "$FS" ] && [ -x "$FS" ] || { echo "quality_planted.sh: set FREESCALE to the program" >&2; exit 2; }
NP=${NP:-2} USERS=${USERS:-2400} LENGTH=${LENGTH:-600} K=${K:-4} ARGS=${ARGS:-}
PY=/usr/bin/python3
"$PY" -c 'import h5py' 2>/dev/null || { echo "quality_planted.sh: skipped: $PY cannot import h5py"; exit 0; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1
W=$(mktemp -d "${TMPDIR:-/tmp}/fs-planted.XXXXXX")
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up

# attr FILE NAME: a float attribute of the planted file
attr() { "$PY" -c 'import sys, h5py; print(float(h5py.File(sys.argv[1], "r").attrs[sys.argv[2]]))' "$1" "$2"; }
# num FILE KEY: KEY of the last test line of the metrics FILE
num() { sed -n "s/.*\"split\":\"test\".*\"$2\":\([^,}]*\).*/\1/p" "$1" | tail -1; }

printf '# planted:%s, %s users x %s events, 50 items, input/planted-rank.in, %s ranks, seeds %s%s\n' \
    "$K" "$USERS" "$LENGTH" "$NP" "$(echo $SEEDS)" "${ARGS:+, $ARGS}"
printf '| seed | optimum AUC | NE | MSE | factors AUC | gap | NE | gap | MSE | s | without AUC | gap | NE | gap | MSE | s |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
: > "$W/rows"
: > "$W/true"
for seed in $SEEDS; do
    d="$W/p$seed.h5"
    "$FS" data gen --users "$USERS" --items 50 --length "fixed:$LENGTH" --timestamps --zipf 0.5 \
        --labels "planted:$K" --seed "$seed" -o "$d" > /dev/null
    oa=$(attr "$d" planted_visible_auc) on=$(attr "$d" planted_visible_ne) om=$(attr "$d" planted_visible_mse)
    echo "$(attr "$d" planted_auc) $(attr "$d" planted_ne) $(attr "$d" planted_mse)" >> "$W/true"
    row="$seed $oa $on $om"
    for f in 4 0; do
        t0=$(date +%s.%N)
        # shellcheck disable=SC2086
        if ! mpirun -np "$NP" "$FS" train "$here/input/planted-rank.in" data.path="$d" \
            data.max_seq_len="$LENGTH" data.split="last:$K" model.factors=$f \
            output.metrics="$W/m.jsonl" $ARGS > "$W/log" 2>&1; then
            echo "quality_planted.sh: seed $seed, model.factors = $f failed:" >&2
            tail -5 "$W/log" >&2
            exit 1
        fi
        t1=$(date +%s.%N)
        a=$(num "$W/m.jsonl" click.auc) n=$(num "$W/m.jsonl" click.ne) m=$(num "$W/m.jsonl" rating.mse)
        row="$row $a $(echo "$a $oa" | awk '{ print $1 - $2 }') $n $(echo "$n $on" | awk '{ print $1 - $2 }') $m"
        row="$row $(echo "$t1 $t0" | awk '{ printf "%.0f", $1 - $2 }')"
        rm -f "$W/m.jsonl"
    done
    rm -f "$d"
    echo "$row" >> "$W/rows"
    echo "$row" | awk '{ printf "| %s |", $1; for (i = 2; i <= NF; i++)
        printf (i == 10 || i == 16) ? " %s |" : ((i == 6 || i == 8 || i == 12 || i == 14) ? " %+.4f |" : " %.4f |"), $i
        printf "\n" }'
done
# per column: median, min, max, std (bench/seed_stats.sh)
. "$here/bench/seed_stats.sh"
stat() { seed_stat "$@"; }
for what in median min max std; do
    printf '| %s |' "$what"
    for c in $(seq 2 16); do
        case $c in 10|16) printf ' %.0f |' "$(stat "$W/rows" $c $what)" ;;
            6|8|12|14) [ $what = std ] && printf ' %s |' "$(stat "$W/rows" $c $what)" ||
                           printf ' %+.4f |' "$(stat "$W/rows" $c $what)" ;;
                   *) printf ' %s |' "$(stat "$W/rows" $c $what)" ;; esac
    done
    printf '\n'
done
printf '| true-probability optimum (median) | %s | %s | %s |\n' "$(stat "$W/true" 1 median)" \
    "$(stat "$W/true" 2 median)" "$(stat "$W/true" 3 median)"
