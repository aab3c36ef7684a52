#!/bin/sh
# cluster_slurm: a 2-node Slurm job through the project's own batch script.
# The nodes are scripts/cluster.sh's network namespaces (TCP between them,
# shared memory within one); the controller and node1's slurmd run in node
# 1, node2's slurmd in node 2 (tests/slurm_lib.sh, SLURM_NODES=2), each node
# offering 2 GPUs. `sbatch -N 2 --ntasks-per-node=2 --gpus-per-task=1
# scripts/slurm/train.sbatch` trains on fake devices (each node its own two,
# named after the node), is sent USR1 mid-run (train.sbatch checkpoints and
# requeues itself with scontrol requeue), restarts on both nodes, resumes
# from the checkpoint and completes with the step losses of an
# uninterrupted run of 4 ranks on one node, identical. Skips (77) without
# Slurm or network namespaces. No wait depends on the machine's speed
# (slurm_lib.sh's waits end on progress).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/slurm_lib.sh"
STEPS=${CLUSTER_SLURM_STEPS:-1000}

if [ "${1:-}" != --in-node1 ]; then
    slurm_skip_unless_installed
    need_mpirun
    need_cluster 2
    # the test itself, inside node 1 (its network: the controller's address)
    SLURM_NODES=2 TOP_SRCDIR="$TOP_SRCDIR" FREESCALE="$FS" "$CL" run 1 sh "$0" --in-node1
    exit $?
fi

slurm_test_setup
pass "Slurm with nodes $(sinfo -h -N -o '%N:%T:%G' | sort -u | tr '\n' ' ')"
# TCP between the nodes on the cluster's interface only
export OMPI_MCA_btl_tcp_if_include=198.18.0.0/24 OMPI_MCA_oob_tcp_if_include=198.18.0.0/24
# each task's GPUs (CUDA_VISIBLE_DEVICES, set by Slurm's GRES) as fake
# devices named after the node (the nodes share the machine's memory, and
# processes that see one name share a device)
cat > "$T/fs-node" <<EOF
#!/bin/sh
if [ "\${1:-}" = train ]; then # (not the batch shell's 'freescale params')
    FREESCALE_FAKE_GPUS=\$(echo "\${CUDA_VISIBLE_DEVICES:-none}" | sed "s/\\([^,]*\\)/\$(hostname)-gpu\\1/g")
    export FREESCALE_FAKE_GPUS
    echo "task \${SLURM_PROCID:-?} on \$(hostname): \$FREESCALE_FAKE_GPUS" >> "$T/devices"
fi
exec "$FS" "\$@"
EOF
chmod +x "$T/fs-node"
export FREESCALE="$T/fs-node"
ARGS="data.path=tiny.h5 model.dropout=0 train.epochs=100000 train.max_steps=$STEPS train.log_every=100
device.type=fake embedding.placement=device parallel.transport=copy-engine"

job=$(slurm_submit -N 2 --ntasks-per-node=2 --gpus-per-task=1 --time=0 "$SB/train.sbatch" "$IN" $ARGS)
[ -n "$job" ] || { fail "sbatch -N 2 train.sbatch"; finish; }
RUN="$T/runs/freescale-$job"
out="$T/slurm-freescale-$job.out"
last_step() { sed -n 's/^{"event":"train",.*"step":\([0-9]*\),.*/\1/p' "$1" 2>/dev/null | tail -n 1; }
past() { s=$(last_step "$1"); [ -n "$s" ] && [ "$s" -ge "$2" ]; }
restarted() { [ "$(grep -c restart= "$RUN/job.txt" 2>/dev/null)" -ge 2 ]; }

if slurm_until "$job" past "$RUN/metrics.jsonl" 300; then
    timeout 300 scancel --batch --signal=USR1 "$job" && pass "job $job on 2 nodes: USR1 at step $s"
else
    fail "no training past step 300 (job $(slurm_state "$job")): $(tail -n 5 "$RUN/log" 2>/dev/null) $(cat "$out")"
    finish
fi
slurm_until "$job" restarted || fail "no restart: $(cat "$out")"
slurm_wait "$job" || fail "job $job did not finish"
[ "$(cat "$T/state")" = COMPLETED ] && pass "job $job COMPLETED" ||
    fail "job $job ended $(cat "$T/state"): $(tail -n 20 "$out"; tail -n 20 "$RUN/log")"
sort "$T/devices" | uniq -c
# each start: 4 tasks, one GPU each, node1's two and node2's two
for start in 1 2; do
    sed -n "$(( (start - 1) * 4 + 1 )),$((start * 4))p" "$T/devices" | sed 's/^task [0-9]* on //' | sort > "$T/got"
    printf 'node1: node1-gpu0\nnode1: node1-gpu1\nnode2: node2-gpu0\nnode2: node2-gpu1\n' > "$T/want"
    cmp -s "$T/got" "$T/want" && pass "start $start: one GPU per task, two per node" ||
        fail "start $start: tasks' GPUs $(tr '\n' ';' < "$T/got")"
done
grep 'nodes=' "$RUN/job.txt"
[ "$(grep -c 'nodes=node\[1-2\] tasks=4' "$RUN/job.txt")" = 2 ] &&
    pass "both starts on node[1-2] with 4 tasks" || fail "job.txt: $(cat "$RUN/job.txt")"
# the restart can only come from the script's scontrol requeue (USR1 does
# not end a job by itself); its own log line is shown, not asserted: Slurm
# may end the batch shell while it writes it (as in slurm_requeue.sh)
restarts=$(timeout 300 scontrol -o show job "$job" | sed -n 's/.* Restarts=\([0-9]*\).*/\1/p')
[ "$restarts" = 1 ] && pass "train.sbatch requeued it (scontrol requeue): Slurm counts 1 restart" ||
    fail "Restarts=$restarts (want 1); script log: $(cat "$RUN/script.log")"
[ "$(grep -c 'resumed from .*ckpt-' "$RUN/log")" = 1 ] && pass "resumed from $(sed -n 's/.*resumed from \(.*ckpt-[0-9]*\.h5\).*/\1/p' "$RUN/log" | xargs basename)" ||
    fail "log: $(grep -i 'resum\|signal' "$RUN/log")"
# fake devices: node-local IPC and rows across the nodes
field_sum() { grep -o "\"$2\":[0-9.e+]*" "$1" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }'; }
x=$(field_sum "$RUN/metrics.jsonl" rows_bytes_xnode) i=$(field_sum "$RUN/metrics.jsonl" ipc_bytes)
awk -v i="$i" -v x="$x" 'BEGIN { exit !(i > 0 && x > 0) }' &&
    pass "$i bytes through IPC within a node, $x row bytes across nodes" ||
    fail "ipc_bytes $i, rows_bytes_xnode $x (both should be > 0)"

# the uninterrupted run: 4 ranks on this node, each its own fake device,
# with the mpi transport (it sums the dense gradients in the order of the
# two nodes' IPC within a node, then MPI across: tests/cluster_losses.sh)
FREESCALE_FAKE_GPUS=r0,r1,r2,r3 "$MPIRUN" -np 4 "$FS" train "$IN" $ARGS parallel.transport=mpi \
    output.metrics=ref.jsonl \
    > ref.log 2>&1 || fail "reference run: $(tail -n 5 ref.log)"
losses "$RUN/metrics.jsonl" > "$T/la"; losses ref.jsonl > "$T/lb"
if [ "$(wc -l < "$T/lb")" = $((STEPS / 100)) ] && cmp -s "$T/la" "$T/lb"; then
    pass "2 nodes, requeued and resumed: losses of an uninterrupted 1-node run, identical ($(wc -l < "$T/la") steps)"
else
    fail "losses differ (2 nodes <, 1 node >): $(diff "$T/la" "$T/lb" | head -n 6 | tr '\n' ' ')"
fi
finish
