# cluster_bench: what bench/peers.sh and bench/scaling.sh share, sourced
# by them (CL, FS, NODES and RATE set): bench/scaling.sh's configuration
# on a namespace cluster (scripts/cluster.sh).
#
#   cluster_bench_up NAME KEEP LOG_EVERY
#
# makes the work directory W (/tmp/bench-NAME.XXXXXX; at exit the cluster
# is taken down and W removed, or printed when KEEP is not empty), exports
# FREESCALE_CLUSTER_DIR and Open MPI's variables, brings up a cluster of
# the largest node count in NODES with links at RATE each way, and writes
# $W/data.h5 (4096 users, 10^6 items, Zipf 0.8, lengths 40-160) and
# $W/sc.in (HSTU d = 64, 2 layers, 32 negatives, log_every = LOG_EVERY).
cluster_bench_up() {
    W=$(mktemp -d "${TMPDIR:-/tmp}/bench-$1.XXXXXX") || exit 1
    CB_KEEP=$2
    export FREESCALE_CLUSTER_DIR=$W/cluster
    trap '"$CL" down >/dev/null 2>&1; [ -n "$CB_KEEP" ] && echo "kept $W" || rm -rf "$W"' EXIT
    trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_vader_single_copy_mechanism=none OMPI_MCA_rmaps_base_oversubscribe=1
    max=0
    for n in $NODES; do [ "$n" -gt "$max" ] && max=$n; done
    "$CL" up "$max" --rate "$RATE" > "$W/up.log" 2>&1 || { cat "$W/up.log"; exit 1; }
    "$FS" data gen --users 4096 --items 1000000 --length uniform:40,160 --zipf 0.8 --seed 5 \
        -o "$W/data.h5" >/dev/null || exit 1
    cat > "$W/sc.in" <<IN
[data]
path = $W/data.h5
max_seq_len = 128
[model]
type = hstu
dim = 64
layers = 2
heads = 2
dropout = 0
[train]
negatives = 32
epochs = 100
log_every = $3
final_eval = off
[embedding]
optimizer = adagrad
IN
}
