# device_feat_body.sh: the body of tests/fake_feat.sh and tests/cuda_feat.sh,
# sourced after lib.sh with DEV = fake | cuda.
#
# Features (features.item, .event, .user: the token assembly on the
# device, tokens_dev.c) and ranking (train.task = ranking: the head, its
# losses and metrics inputs on the device, task_ranking.c) train on the
# device as on the CPU: at P = 1, 2, 3 (ranks sharing one device) the
# losses and the evaluation's metrics of the two backends agree; on the
# fake device (the CPU's own operations) exactly, tolerance 0. Ranking:
# summed and interleaved actions, with item, user and event features. Its
# evaluation (the candidates' target mask) needs context-parallel
# attention: where the backend refuses it with that reason, the training
# losses alone are compared (and the refusal is checked). With the tables
# in device memory (embedding.placement = device: the item table, the
# feature tables sharded and replicated, the labels' tables) at P = 1, 2,
# 4 the same, for features and for ranking with model.bias, recency and
# factors (parallel.transport = mpi: the IPC all-reduce of 4 ranks sums in
# another order than the CPU's MPI); a P = 2 checkpoint of device tables
# holds the host tables' state (h5diff) and resumes at P = 4 as the CPU's
# does; dynamic feature tables (features.dynamic) in device memory at
# P = 2 the same. CUDA: SKIP (77) when no GPU is usable or the build has
# no CUDA backend.
need_mpirun
IN=$TOP_SRCDIR/input/tiny.in
run() { name=$1 np=$2; shift 2
    timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" train.max_steps=6 train.log_every=1 \
        device.share=on "output.metrics=$T/$name.jsonl" "$@" >"$T/$name.out" 2>&1; }
if [ "$DEV" = fake ]; then TOL=0 MTOL=0; else TOL=1e-3 MTOL=2e-3; fi

"$FS" data gen --users 60 --items 150 --length uniform:4,30 --timestamps --item-feature genres:12:3 \
    --item-feature brand:30 --user-feature age:7 --user-feature occ:15:2 --event-feature act:5 \
    -o "$T/all.h5" >/dev/null || { fail "data gen"; finish; }
if ! run probe 1 device.type=$DEV train.max_steps=1 train.final_eval=off "data.path=$T/all.h5"; then
    [ "$DEV" = fake ] && { fail "the fake device does not train: $(tail -c 300 "$T/probe.out")"; finish; }
    echo "SKIP: no usable GPU: $(grep -o 'device.type=cuda: .*' "$T/probe.out" | head -n 1)"
    exit 77
fi

# --- features: item, user (contextual tokens) and event features --------------
F="data.path=$T/all.h5 features.item=genres,brand features.user=age,occ features.event=act"
for np in 1 2 3; do
    run fc$np $np $F device.type=cpu || fail "features cpu P=$np: $(tail -3 "$T/fc$np.out")"
    run fd$np $np $F device.type=$DEV || fail "features $DEV P=$np: $(tail -3 "$T/fd$np.out")"
    same_losses "$T/fc$np.jsonl" "$T/fd$np.jsonl" "features, $DEV vs cpu, P=$np" 0 $TOL
    same_evals "$T/fc$np.jsonl" "$T/fd$np.jsonl" "features, $DEV vs cpu, P=$np" $MTOL
done
# the tables in device memory: every feature table sharded, then replicated
DT="device.type=$DEV embedding.placement=device parallel.transport=mpi"
for np in 1 2 4; do
    for pl in sharded replicated; do
        run tc$np$pl $np $F features.placement=$pl device.type=cpu ||
            fail "features ($pl) cpu P=$np: $(tail -3 "$T/tc$np$pl.out")"
        run td$np$pl $np $F features.placement=$pl $DT ||
            fail "features ($pl), device tables P=$np: $(tail -3 "$T/td$np$pl.out")"
        same_losses "$T/tc$np$pl.jsonl" "$T/td$np$pl.jsonl" \
            "features ($pl tables) in $DEV memory vs cpu, P=$np" 0 $TOL
        same_evals "$T/tc$np$pl.jsonl" "$T/td$np$pl.jsonl" \
            "features ($pl tables) in $DEV memory vs cpu, P=$np" $MTOL
    done
done
# a dynamic feature table (features.dynamic) in device memory too, at P = 2
# (tests/fake_dynamic_feat.sh: admission, eviction, checkpoints, P = 1, 4)
run dyc2 2 $F features.placement=sharded features.dynamic=brand,occ device.type=cpu ||
    fail "dynamic features cpu: $(tail -3 "$T/dyc2.out")"
run dyd2 2 $F features.placement=sharded features.dynamic=brand,occ $DT ||
    fail "dynamic features, device tables: $(tail -3 "$T/dyd2.out")"
same_losses "$T/dyc2.jsonl" "$T/dyd2.jsonl" "dynamic feature tables in $DEV memory vs cpu, P=2" 0 $TOL
same_evals "$T/dyc2.jsonl" "$T/dyd2.jsonl" "dynamic feature tables in $DEV memory vs cpu, P=2" $MTOL
run fs2 2 data.path=$T/all.h5 features.event=act model.type=sasrec train.loss=bce device.type=cpu ||
    fail "sasrec features cpu"
run fsd2 2 data.path=$T/all.h5 features.event=act model.type=sasrec train.loss=bce device.type=$DEV ||
    fail "sasrec features $DEV: $(tail -3 "$T/fsd2.out")"
same_losses "$T/fs2.jsonl" "$T/fsd2.jsonl" "sasrec, event features on their tokens, $DEV vs cpu" 0 $TOL

# --- ranking ---------------------------------------------------------------------
. "$TOP_SRCDIR/tests/rank_feat_data.sh"
rank_feat_data "$T" "$FS" || { fail "import"; finish; }
R="data.path=$T/r.h5 train.task=ranking train.tasks=like:binary:rating>=4,rating:regression:rating:0.5 \
data.split=last:20% train.batch_size=12 features.item=genres features.user=age model.head=16"
EVAL=on
if ! run rprobe 1 $R device.type=$DEV train.max_steps=1; then
    if grep -q "needs context-parallel attention, which the $DEV backend does not have" "$T/rprobe.out"; then
        pass "ranking evaluation on $DEV: refused for want of context-parallel attention"
        EVAL=off
    else
        fail "ranking on $DEV: $(tail -3 "$T/rprobe.out")"
    fi
fi
for np in 1 2 3; do
    for act in sum interleave; do
        A="model.actions=$act train.final_eval=$EVAL"
        run rc$np$act $np $R $A device.type=cpu || fail "ranking cpu P=$np $act: $(tail -3 "$T/rc$np$act.out")"
        run rd$np$act $np $R $A device.type=$DEV || fail "ranking $DEV P=$np $act: $(tail -3 "$T/rd$np$act.out")"
        same_losses "$T/rc$np$act.jsonl" "$T/rd$np$act.jsonl" "ranking ($act), $DEV vs cpu, P=$np" 0 $TOL
        [ $EVAL = on ] && same_evals "$T/rc$np$act.jsonl" "$T/rd$np$act.jsonl" \
            "ranking ($act), $DEV vs cpu, P=$np" $MTOL
    done
done
# ranking with its tables in device memory: the head's model.bias, recency
# and factors, item, user and event features (the labels' tables), sharded
B="model.bias=on model.recency=4 model.factors=4 features.event=click features.placement=sharded \
train.final_eval=$EVAL"
for np in 1 2 4; do
    run bc$np $np $R $B device.type=cpu || fail "ranking+bias cpu P=$np: $(tail -3 "$T/bc$np.out")"
    run bd$np $np $R $B $DT || fail "ranking+bias, device tables P=$np: $(tail -3 "$T/bd$np.out")"
    same_losses "$T/bc$np.jsonl" "$T/bd$np.jsonl" \
        "ranking with bias, recency, factors, tables in $DEV memory vs cpu, P=$np" 0 $TOL
    [ $EVAL = on ] && same_evals "$T/bc$np.jsonl" "$T/bd$np.jsonl" \
        "ranking with bias, recency, factors, tables in $DEV memory vs cpu, P=$np" $MTOL
done
# a checkpoint of device tables at P = 2 holds the host tables' state and
# resumes at P = 4 as theirs does
run bk2 2 $R $B $DT "output.checkpoint_dir=$T/bk" train.checkpoint_every=3 ||
    fail "ranking+bias, device tables, checkpoint: $(tail -3 "$T/bk2.out")"
run bkc2 2 $R $B device.type=cpu "output.checkpoint_dir=$T/bkc" train.checkpoint_every=3 ||
    fail "ranking+bias cpu, checkpoint: $(tail -3 "$T/bkc2.out")"
[ "$DEV" = fake ] && same_state "$T/bkc/ckpt-3.h5" "$T/bk/ckpt-3.h5" \
    "ranking with features: a checkpoint of device tables vs host tables"
run br4 4 $R $B $DT "train.resume=$T/bk/ckpt-3.h5" ||
    fail "resume at P=4 from device tables: $(tail -3 "$T/br4.out")"
run brc4 4 $R $B device.type=cpu "train.resume=$T/bkc/ckpt-3.h5" ||
    fail "resume at P=4 on the cpu: $(tail -3 "$T/brc4.out")"
same_losses "$T/brc4.jsonl" "$T/br4.jsonl" \
    "ranking, resumed at P=4 from a P=2 checkpoint: device tables vs cpu" 3 $TOL
same_losses "$T/bd2.jsonl" "$T/br4.jsonl" \
    "ranking, resumed at P=4 from device tables vs uninterrupted at P=2" 3 1e-5

# parallel.transport = copy-engine with sharded feature tables in device
# memory: only the item table is set up for CUDA IPC (the feature tables'
# lookups are emb_multi.c's own exchange, by MPI)
run ipc2 2 $F features.placement=sharded device.type=$DEV embedding.placement=device \
    parallel.transport=copy-engine train.max_steps=2 train.final_eval=off ||
    fail "copy-engine with feature tables: $(tail -3 "$T/ipc2.out")"
grep -q 'embedding rows and gradients of 1 device table through CUDA IPC' "$T/ipc2.out" &&
    pass "copy-engine: CUDA IPC set up for the item table only, not the feature tables" ||
    fail "copy-engine: $(grep -o 'embedding rows and gradients of [0-9]* device tables*' "$T/ipc2.out")"
finish
