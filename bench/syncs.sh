#!/bin/sh
# syncs: host waits per training step (the metrics' device_syncs) on the
# fake device with the tables in its memory, for the three workloads of
# issue 51's bar (at most 4 a step; doc/gpu.md, "What a step waits for"):
#   (a) HSTU ranking with item, user and event features, model.bias,
#       recency and factors (the ranking data of tests/device_feat_body.sh:
#       48 users, 90 items; batch 12, 40 steps, log_every 10)
#   (b) retrieval with a dynamic item table, embedding.admit = 2 and lru
#       under a capacity of 1500 (of 2000 items; tests/fake_dynamic.sh's
#       data; 20 steps, log_every 5)
#   (c) a stream over window files (2 day files of data gen --stream, 400
#       users, 300 items; 12h windows) with a dynamic item table (batch 8,
#       log_every 5; the last interval: the last window's last 3 steps)
# each at P = 1 and 2 ranks sharing the device (device.share = on,
# parallel.transport = mpi). The figure: device_syncs of the last logging
# interval, per step, the largest over ranks (the metrics' own).
#
#   bench/syncs.sh                      the build of this tree
#   bench/syncs.sh OLD/freescale [NEW/freescale]
#                                       two builds side by side (NEW: this
#                                       tree's), e.g. a copy of main's
#   SYNCS_NP="1 2"                      the rank counts
#   FREESCALE_SYNC_TRACE=1 bench/syncs.sh   every wait's stack (stderr,
#                                       kept in the work folder's *.out)
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
NEW=$TOP/freescale
if [ $# -ge 2 ]; then OLD=$1 NEW=$2
elif [ $# -eq 1 ]; then OLD=$1
else OLD=; fi
for b in $OLD $NEW; do [ -x "$b" ] || { echo "syncs: $b is not a program"; exit 1; }; done
MPIRUN=${MPIRUN:-$(command -v mpirun)}
[ -n "$MPIRUN" ] || { echo "syncs: mpirun not found"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export OPENBLAS_NUM_THREADS=1
NPS=${SYNCS_NP:-1 2}
W=$(mktemp -d "${TMPDIR:-/tmp}/syncs.XXXXXX")
[ -n "${SYNCS_KEEP:-}" ] && echo "syncs: work folder $W" || trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
IN=$TOP/input/tiny.in
FS=$NEW

# the data (made by the new build)
. "$TOP/tests/rank_feat_data.sh"
rank_feat_data "$W" "$FS" || { echo "syncs: data import failed"; exit 1; }
"$FS" data gen --users 64 --items 2000 --length pareto:8,1.2 --max-length 60 --timestamps \
    -o "$W/d.h5" >/dev/null || { echo "syncs: data gen failed"; exit 1; }
"$FS" data gen --stream --days 2 --users 400 --items 300 --new-items-per-day 20 --labels --seed 3 \
    -o "$W/one.h5" --split-days "$W/D" >/dev/null || { echo "syncs: data gen --stream failed"; exit 1; }

DEV="device.type=fake device.share=on embedding.placement=device parallel.transport=mpi"
A="data.path=$W/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5
data.split=last:20% train.batch_size=12 features.item=genres features.user=age model.head=16
model.bias=on model.recency=4 model.factors=4 features.event=click features.placement=sharded
train.epochs=50 train.max_steps=40 train.log_every=10 train.final_eval=off"
DYN="data.max_seq_len=64 model.layers=1 model.dim=16 embedding.dynamic=on train.eval_every=0
train.final_eval=off"
B="data.path=$W/d.h5 $DYN train.epochs=10 train.max_steps=20 train.log_every=5 embedding.admit=2
embedding.evict=lru embedding.capacity=1500"
C="data.path=$W/D/day-*.h5 $DYN train.schedule=stream data.window=12h train.batch_size=8
train.log_every=5"

# syncs BUILD NAME NP ARGS...: the last train line's device_syncs
syncs() {
    sb=$1 sn=$2 sp=$3; shift 3
    if ! "$MPIRUN" -np "$sp" "$sb" train "$IN" $DEV "output.metrics=$W/$sn.jsonl" "$@" \
        >"$W/$sn.out" 2>&1; then echo "failed"; return; fi
    grep '"event":"train"' "$W/$sn.jsonl" | tail -n 1 | grep -o '"device_syncs":[0-9.]*' |
        awk -F: '{ printf "%.2f", $2 }'
}

printf '%-44s' "device_syncs per step (last interval)"
[ -n "$OLD" ] && printf '%10s' "before"
[ -n "$OLD" ] && printf '%10s\n' after || printf '%10s\n' now
for w in a b c; do
    case $w in
    a) args=$A label="(a) ranking, features, bias, recency, factors" ;;
    b) args=$B label="(b) retrieval, dynamic, admit 2, lru 1500" ;;
    c) args=$C label="(c) stream of window files, dynamic" ;;
    esac
    for np in $NPS; do
        printf '%-44s' "$(echo "$label" | cut -c 1-36), P=$np"
        [ -n "$OLD" ] && printf '%10s' "$(syncs "$OLD" "$w$np-old" "$np" $args)"
        printf '%10s\n' "$(syncs "$NEW" "$w$np-new" "$np" $args)"
    done
done
