#!/bin/sh
# cluster_losses: two nodes of two ranks (scripts/cluster.sh: network
# namespaces, TCP between the nodes, shared memory within one) give the
# losses of one node of four ranks, identical (cmp of the step/loss
# listings): HSTU and SASRec with host tables under every overlap mode
# (none, prioritized, prefetch), split_long, an embedding group spanning
# the nodes (ranks placed round-robin), and fake-device tables whose rows,
# gradients and dense all-reduce go through IPC within a node and MPI
# across (parallel.transport = copy-engine; ipc_bytes > 0 and
# rows_bytes_xnode > 0; against one node's mpi transport, which sums the
# dense gradients in the same order as the two nodes' IPC-then-MPI). Runs
# twice to show the two-node run repeats. Skips (77) where network
# namespaces are refused (not root, no ip); waits its turn for the cluster
# (the lock of tests/lib.sh need_cluster).
. "$(dirname "$0")/lib.sh"
need_mpirun
need_cluster 2
tiny_data
COMMON="data.path=$T/tiny.h5 device.type=cpu train.epochs=10 train.max_steps=6 train.log_every=1
train.eval_every=0 train.final_eval=off"
two() { # NAME ARGS...: 2 nodes x 2 ranks
    n=$1; shift
    "$CL" mpirun --hostfile "$FREESCALE_CLUSTER_DIR/hostfile" -np 4 $MAP "$FS" train "$IN" $COMMON "$@" \
        output.metrics="$T/$n-2x2.jsonl" > "$T/$n-2x2.log" 2>&1 ||
        fail "$n: 2 nodes: $(tail -n 5 "$T/$n-2x2.log")"
}
one() { # NAME ARGS...: 1 node x 4 ranks
    n=$1; shift
    "$MPIRUN" -np 4 "$FS" train "$IN" $COMMON "$@" output.metrics="$T/$n-1x4.jsonl" \
        > "$T/$n-1x4.log" 2>&1 || fail "$n: 1 node: $(tail -n 5 "$T/$n-1x4.log")"
}
identical() { # NAME A B
    losses "$2" > "$T/la"; losses "$3" > "$T/lb"
    if [ -s "$T/la" ] && cmp -s "$T/la" "$T/lb"; then pass "$1: losses identical ($(wc -l < "$T/la") steps)"
    else fail "$1: losses differ: $(diff "$T/la" "$T/lb" | head -n 3 | tr '\n' ' ')"; fi
}
field_sum() { grep -o "\"$2\":[0-9.e+]*" "$1" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'; }
case_() { # NAME ARGS...
    n=$1; shift
    two "$n" "$@"
    one "$n" "$@"
    identical "$n: 2 nodes x 2 vs 1 node x 4" "$T/$n-2x2.jsonl" "$T/$n-1x4.jsonl"
    x=$(field_sum "$T/$n-2x2.jsonl" rows_bytes_xnode)
    awk -v x="$x" 'BEGIN { exit !(x > 0) }' && pass "$n: rows crossed nodes ($x bytes)" ||
        fail "$n: no rows to the other node (rows_bytes_xnode $x)"
}
MAP=
for ov in none prioritized prefetch; do
    case_ "hstu-$ov" parallel.overlap=$ov
done
case_ sasrec model.type=sasrec
case_ split parallel.split_long=auto debug.split_chunks=2
# groups of 2 consecutive ranks; round-robin placement puts them on both nodes
MAP="--map-by node"
case_ group parallel.embedding_group=2
MAP=
# fake-device tables: rows, gradients and the dense all-reduce through IPC
# within a node, MPI across (and one node's mpi transport as the reference)
FAKE="device.type=fake device.share=on embedding.placement=device"
two fake $FAKE parallel.transport=copy-engine
cp "$T/fake-2x2.jsonl" "$T/fake-first.jsonl"
two fake $FAKE parallel.transport=copy-engine
one fake $FAKE parallel.transport=mpi
identical "fake device, copy-engine: a second 2-node run" "$T/fake-2x2.jsonl" "$T/fake-first.jsonl"
identical "fake device, copy-engine on 2 nodes vs mpi on 1" "$T/fake-2x2.jsonl" "$T/fake-1x4.jsonl"
i=$(field_sum "$T/fake-2x2.jsonl" ipc_bytes) x=$(field_sum "$T/fake-2x2.jsonl" rows_bytes_xnode)
awk -v i="$i" -v x="$x" 'BEGIN { exit !(i > 0 && x > 0) }' &&
    pass "fake device: $i bytes through IPC, $x row bytes across nodes" ||
    fail "fake device: ipc_bytes $i, rows_bytes_xnode $x (both should be > 0)"
finish
