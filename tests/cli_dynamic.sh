#!/bin/sh
# cli_dynamic: dynamic tables (embedding.dynamic, features.dynamic;
# doc/embedding.md, "Dynamic tables"). On a dense dataset a dynamic table
# with admit = 1, evict = none gives the dense table's losses bit for bit
# at the same P (P = 1, 2, 4): HSTU and SASRec retrieval, the full
# softmax, ranking, a
# dynamic feature table, overlap none and prefetch, embedding groups, the
# fake device. Admission with ttl (sgd) and ttl (adagrad) give the same
# losses at P = 1, 2, 4 (1e-6) and prefetch repeats none bit for bit; lru
# under a binding capacity repeats bit for bit at P = 2, holds at most the
# capacity and evicts. A checkpoint written at P = 4 resumes at P = 3 with
# the uninterrupted run's losses; a chain of a full and 3 delta checkpoints
# resumes and merges to the full checkpoint of the same step; evaluation and recommend over a dynamic
# table give the dense table's. The counters are on the progress line and
# in the metrics; bad settings are refused by name, and a resume that
# changes embedding.dynamic (in the run identity) too.
. "$(dirname "$0")/lib.sh"
need_mpirun
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 64 --items 2000 --length pareto:8,1.2 --max-length 60 --timestamps \
    --item-feature brand:300 --labels planted -o "$T/d.h5" >/dev/null 2>&1 || { fail "data gen"; finish; }
COMMON="data.path=$T/d.h5 data.max_seq_len=64 device.type=cpu train.epochs=10 train.max_steps=6
train.log_every=1 train.eval_every=0 train.final_eval=off model.layers=1 model.dim=16"
# run, identical: tests/lib.sh
pair() { # NAME TAG NP ARGS...: dense vs dynamic, identical (files $T/TAG-dense, $T/TAG-dyn)
    pn=$1 pt=$2 pp=$3; shift 3
    run "$pt-dense" "$pp" "$@"
    run "$pt-dyn" "$pp" "$@" embedding.dynamic=on
    identical "$pn: dynamic = dense" "$T/$pt-dense.jsonl" "$T/$pt-dyn.jsonl"
}
same_dyn() { # A B TABLES EXACT CLOSE NAME: of each /emb/TABLE of checkpoints A and B,
    # the datasets EXACT are identical, CLOSE within 1e-6 (those present in
    # A; in B alone: a failure), and A's ids ascend from 0
    if ! command -v h5diff >/dev/null 2>&1; then
        pass "$6: not compared (h5diff, of hdf5-tools, is not installed)"
        return
    fi
    sd_n=0
    for tb in $3; do
        for ds in $4 $5; do
            h5ls "$1/emb/$tb/$ds" >/dev/null 2>&1 || { h5ls "$2/emb/$tb/$ds" >/dev/null 2>&1 &&
                fail "$6: /emb/$tb/$ds only in $2"; continue; }
            case " $4 " in *" $ds "*) tol= ;; *) tol="-d 1e-6" ;; esac
            if h5diff -q $tol "$1" "$2" "/emb/$tb/$ds" "/emb/$tb/$ds" >/dev/null 2>&1; then
                sd_n=$((sd_n + 1))
            else
                fail "$6: /emb/$tb/$ds differs: $(h5diff $tol "$1" "$2" "/emb/$tb/$ds" \
                    "/emb/$tb/$ds" 2>&1 | head -n 3 | tr '\n' ' ')"
                return
            fi
        done
        if have_h5py && ! "$PY" -c 'import sys, h5py, numpy as np
a = h5py.File(sys.argv[1], "r")[sys.argv[2]][:]
sys.exit(not (len(a) > 1 and a[0] == 0 and (np.diff(a) > 0).all()))' "$1" "/emb/$tb/ids"; then
            fail "$6: /emb/$tb/ids of $1 does not ascend from 0"
            return
        fi
    done
    pass "$6: $sd_n datasets the same ($4 bit for bit${5:+, $5 to 1e-6}), ids ascending"
}
RANK="train.task=ranking train.tasks=click:binary:click data.split=last:1 train.batch_size=16"
pair "HSTU P=1" h1 1
pair "HSTU P=2 prefetch" h2 2 parallel.overlap=prefetch
pair "SASRec P=2 bce" s2 2 model.type=sasrec train.loss=bce parallel.overlap=none
# the fake device (embedding.placement = auto: host tables) = the CPU
FREESCALE_FAKE_GPUS=fake0,fake1 run fk 2 parallel.overlap=prefetch device.type=fake embedding.dynamic=on
identical "HSTU P=2 prefetch, fake device, dynamic = CPU dense" "$T/h2-dense.jsonl" "$T/fk.jsonl"
pair "HSTU P=4 prefetch groups" h4 4 parallel.overlap=prefetch parallel.embedding_group=2
pair "ranking P=4" r4 4 $RANK
# the full softmax: every item of the dataset a candidate, each its row
pair "full softmax P=1" fs1 1 train.loss=full
pair "full softmax P=2 prefetch" fs2 2 train.loss=full parallel.overlap=prefetch
grep -q '"items.rows":2000,' "$T/fs1-dyn.jsonl" && pass "full softmax: every item has a row" ||
    fail "full softmax: $(grep -o '"items.rows":[0-9]*' "$T/fs1-dyn.jsonl" | head -n 1)"
F="features.item=brand features.placement=sharded parallel.overlap=prefetch"
run f2-dense 2 $F
run f2-dyn 2 $F features.dynamic=brand
identical "features P=2: a dynamic feature table = dense" "$T/f2-dense.jsonl" "$T/f2-dyn.jsonl"
# both dynamic: the item rows' order differs at P > 1 (grouped by another
# owner), and with it the order the feature gradients are summed in
run f2-both 2 $F features.dynamic=brand embedding.dynamic=on
same_losses "$T/f2-dense.jsonl" "$T/f2-both.jsonl" "features P=2: dynamic item and feature tables" 0 1e-6
grep -q 'item feature brand: .*dynamic, sharded' "$T/f2-dyn.out" &&
    pass "the feature table is dynamic" || fail "feature line: $(grep 'feature brand' "$T/f2-dyn.out")"
grep -q "dynamic table 'items': 2 shards, capacity unbounded" "$T/h2-dyn.out" &&
    pass "start-up line" || fail "no start-up line: $(grep -i dynamic "$T/h2-dyn.out" | head -2)"
grep -q ' items rows [0-9]* +[0-9.]* -0.0/step unadmitted 0.0/step load 0\.' "$T/h1-dyn.out" &&
    pass "progress line" || fail "progress line: $(grep -m1 'step 2/' "$T/h1-dyn.out")"
grep -q '"items.rows":[1-9][0-9]*,"items.inserted":[0-9.e+]*,"items.evicted":0,"items.unadmitted_hits":0,"items.load":0\.' \
    "$T/h1-dyn.jsonl" && pass "metrics" || fail "metrics: $(grep -o '"items[^,]*' "$T/h1-dyn.jsonl" | head -5 | tr '\n' ' ')"

# admission and ttl: the same losses on any P; prefetch = none. With sgd:
# the shared unadmitted row's gradient is summed over many ids in an order
# that depends on P, and adagrad's first steps (g / sqrt(g^2)) make the
# rounding of its near-zero coordinates visible (doc/embedding.md)
A="embedding.dynamic=on embedding.admit=2 embedding.evict=ttl:2 embedding.optimizer=sgd"
for np in 1 2 4; do run "adm$np" $np $A parallel.overlap=none output.checkpoint_dir="$T/adm$np"; done
same_losses "$T/adm1.jsonl" "$T/adm2.jsonl" "admit=2 ttl:2: P=2 vs P=1" 0 1e-6
same_losses "$T/adm1.jsonl" "$T/adm4.jsonl" "admit=2 ttl:2: P=4 vs P=1" 0 1e-6
T2="embedding.dynamic=on embedding.evict=ttl:1"
run ttl1 1 $T2
run ttl4 4 $T2 parallel.overlap=prefetch
same_losses "$T/ttl1.jsonl" "$T/ttl4.jsonl" "ttl:1 (adagrad): P=4 prefetch vs P=1" 0 1e-6
# a checkpoint's dynamic tables are sorted by id whatever P wrote them: the
# same step at P = 2 and at P = 4 holds the same ids, statistics and
# probation list in the same order, bit for bit, and the same rows to 1e-6
# (the unadmitted row's gradient is summed in an order that depends on P)
same_dyn "$T/adm2/ckpt-6.h5" "$T/adm4/ckpt-6.h5" items "ids last freq prob" weight \
    "checkpoint at P=2 and at P=4 (sgd, admit=2 ttl:2)"
# embedding groups: written at P = 4 by the first group of 2 shards, the
# same ids in the same order as at P = 2 (last and freq count the first
# group's lookups: not compared)
S="embedding.dynamic=on embedding.optimizer=sgd"
run ck-g2 2 $S output.checkpoint_dir="$T/cg2"
run ck-g4 4 $S output.checkpoint_dir="$T/cg4" parallel.embedding_group=2
same_dyn "$T/cg2/ckpt-6.h5" "$T/cg4/ckpt-6.h5" items ids weight \
    "checkpoint at P=2 and at P=4 with embedding groups of 2 (sgd)"
run admp 2 $A parallel.overlap=prefetch
identical "admit=2 ttl:2 P=2: prefetch = none" "$T/adm2.jsonl" "$T/admp.jsonl"
ev=$(grep -o '"items.evicted":[0-9.e+]*' "$T/adm2.jsonl" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
un=$(grep -o '"items.unadmitted_hits":[0-9.e+]*' "$T/adm2.jsonl" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
awk -v e="$ev" -v u="$un" 'BEGIN { exit !(e > 0 && u > 0) }' &&
    pass "ttl evicted ($ev/step summed) and ids waited for admission ($un/step)" ||
    fail "evicted $ev, unadmitted hits $un"
losses "$T/ttl1.jsonl" > "$T/la"; losses "$T/h1-dense.jsonl" > "$T/lb"
cmp -s "$T/la" "$T/lb" && fail "ttl:1 changed nothing" || pass "ttl:1 changes the run"

# lru under a binding capacity: bit for bit at P = 2, rows at the bound
L="embedding.dynamic=on embedding.capacity=600 embedding.evict=lru"
run lru-a 2 $L
run lru-b 2 $L parallel.overlap=prefetch
identical "lru capacity=600 P=2: repeats (prefetch too)" "$T/lru-a.jsonl" "$T/lru-b.jsonl"
grep -o '"items.rows":[0-9]*' "$T/lru-a.jsonl" | cut -d: -f2 | awk '$1 > 600 { bad = 1 } END { exit bad }' &&
    pass "lru: at most 600 rows" || fail "lru: rows above the capacity"
ev=$(grep -o '"items.evicted":[0-9.e+]*' "$T/lru-a.jsonl" | cut -d: -f2 | awk '{ s += $1 } END { print s + 0 }')
awk -v e="$ev" 'BEGIN { exit !(e > 0) }' && pass "lru evicted" || fail "lru evicted nothing"

# checkpoints: written at P = 4, resumed at P = 3 (re-hashed) = the
# uninterrupted run; admission, ttl and a dynamic feature table
K="embedding.dynamic=on embedding.admit=2 embedding.evict=ttl:2 features.item=brand
features.placement=sharded features.dynamic=brand train.max_steps=8"
run ck-w 4 $K output.checkpoint_dir="$T/ck" train.checkpoint_every=4
run ck-r 3 $K train.resume="$T/ck/ckpt-4.h5"
same_losses "$T/ck-w.jsonl" "$T/ck-r.jsonl" "checkpoint at P=4, resumed at P=3" 4 1e-6
[ "$(losses "$T/ck-r.jsonl" | head -1 | cut -d' ' -f1)" = 5 ] && pass "resumed from step 5" ||
    fail "resume did not start at step 5"
# and the same run's ckpt-8.h5 at P = 2: the same ids, statistics and
# probation lists, bit for bit (adagrad's rows differ beyond rounding
# across P, see above: compared with sgd after the admission runs)
run ck-2 2 $K output.checkpoint_dir="$T/ck2" train.checkpoint_every=8
same_dyn "$T/ck2/ckpt-8.h5" "$T/ck/ckpt-8.h5" "items feat.brand" "ids last freq prob" "" \
    "checkpoint of item and feature tables at P=2 and at P=4"

# delta checkpoints: a full one at step 8, deltas at 10, 12, 14; resumed
# from delta-14 (its chain read) = resumed from a full checkpoint of step
# 14 (bit for bit) = the uninterrupted run; checkpoint merge of the chain
# = that full checkpoint (every dataset); a damaged or missing link refused
# by name
DL="embedding.dynamic=on embedding.admit=2 embedding.evict=ttl:3 features.item=brand
features.placement=sharded features.dynamic=brand train.max_steps=16"
run dl-w 2 $DL output.checkpoint_dir="$T/dl" train.checkpoint_every=8 output.checkpoint_delta_every=2
run dl-f 2 $DL output.checkpoint_dir="$T/df" train.checkpoint_every=2
for f in ckpt-8.h5 delta-10.h5 delta-12.h5 delta-14.h5 ckpt-16.h5; do
    [ -f "$T/dl/$f" ] || fail "no $f"
done
run dl-rd 3 $DL train.resume="$T/dl/delta-14.h5"
run dl-rf 3 $DL train.resume="$T/df/ckpt-14.h5"
identical "resumed from delta-14's chain = from a full checkpoint of step 14" "$T/dl-rd.jsonl" "$T/dl-rf.jsonl"
same_losses "$T/dl-w.jsonl" "$T/dl-rd.jsonl" "resumed from the chain (P=3) vs uninterrupted (P=2)" 14 1e-6
grep -q "delta checkpoint $T/dl/delta-12.h5: applied on top of $T/dl/delta-10.h5" "$T/dl-rd.out" &&
    pass "the chain was read" || fail "chain: $(grep -m3 'delta' "$T/dl-rd.out")"
expect_ok "$MPIRUN" -np 2 "$FS" checkpoint merge "$T/dl/delta-14.h5" -o "$T/merged.h5"
# the chain's lines in its order: delta-10 on ckpt-8 first, delta-14 last
grep -o 'delta-1[024]\.h5: applied on top of [^ ]*' "$T/out" | sed 's|on top of .*/|on top of |' |
    tr '\n' ' ' > "$T/chain"
[ "$(cat "$T/chain")" = "delta-10.h5: applied on top of ckpt-8.h5 delta-12.h5: applied on top of delta-10.h5 delta-14.h5: applied on top of delta-12.h5 " ] &&
    pass "checkpoint merge lists the chain in order" || fail "merge chain order: $(cat "$T/chain")"
same_state "$T/merged.h5" "$T/df/ckpt-14.h5" "checkpoint merge of the chain = the full checkpoint of step 14"
expect_error "exists: name a new file" "$FS" checkpoint merge "$T/dl/delta-14.h5" -o "$T/merged.h5"
# train.resume = auto: the newest full checkpoint and the deltas after it
cp -r "$T/dl" "$T/da"
rm "$T/da/ckpt-16.h5"
run dl-a 3 $DL output.checkpoint_dir="$T/da" train.checkpoint_every=8 \
    output.checkpoint_delta_every=2 train.resume=auto
grep -q "ckpt-8.h5 and the delta checkpoints after it, to $T/da/delta-14.h5" "$T/dl-a.out" &&
    pass "resume = auto: ckpt-8 and its deltas to delta-14" || fail "auto: $(grep -m2 'resume' "$T/dl-a.out")"
identical "resume = auto from the chain = from the full checkpoint" "$T/dl-rf.jsonl" "$T/dl-a.jsonl"
cp "$T/dl/delta-12.h5" "$T/d12.h5"
size=$(stat -c %s "$T/dl/delta-12.h5")
head -c 4096 /dev/urandom | dd of="$T/dl/delta-12.h5" bs=1 seek=$((size / 2)) conv=notrunc 2>/dev/null
expect_error "delta-12.h5, which is refused" "$MPIRUN" -np 2 "$FS" train "$IN" $COMMON $DL \
    train.resume="$T/dl/delta-14.h5"
# auto, a damaged link: the chain ends before it (said), resumed at step 10
rm -f "$T/da/ckpt-16.h5"
cp "$T/dl/delta-12.h5" "$T/da/delta-12.h5"
run dl-b 3 $DL output.checkpoint_dir="$T/da" train.checkpoint_every=8 \
    output.checkpoint_delta_every=2 train.resume=auto
grep -q "delta checkpoint $T/da/delta-12.h5 is refused" "$T/dl-b.out" &&
    pass "resume = auto: the damaged delta-12 named" || fail "auto damaged: $(grep -m2 'delta' "$T/dl-b.out")"
[ "$(losses "$T/dl-b.jsonl" | head -1 | cut -d' ' -f1)" = 11 ] && pass "resumed at step 10" ||
    fail "auto damaged: not resumed at step 10"
same_losses "$T/dl-w.jsonl" "$T/dl-b.jsonl" "resumed from delta-10 vs uninterrupted" 10 1e-6
cp "$T/d12.h5" "$T/dl/delta-12.h5"
rm "$T/dl/delta-10.h5"
expect_error "follows $T/dl/delta-10.h5, which is refused" "$MPIRUN" -np 2 "$FS" train "$IN" \
    $COMMON $DL train.resume="$T/dl/delta-14.h5"
grep -qF "put delta-10.h5 back, or resume from a full checkpoint (ckpt-STEP.h5)" "$T/err" &&
    pass "a missing link: the way out named" || fail "missing link: $(head -c 600 "$T/err")"
# auto with that link missing: ckpt-8 alone, the orphans after it said
cp -r "$T/dl" "$T/do"
rm "$T/do/ckpt-16.h5"
run dl-o 3 $DL output.checkpoint_dir="$T/do" train.checkpoint_every=8 \
    output.checkpoint_delta_every=2 train.resume=auto
grep -q "delta checkpoint $T/do/delta-12.h5 is left out: it follows delta-10.h5 (step 10), not ckpt-8.h5 (step 8)" "$T/dl-o.out" &&
    [ "$(losses "$T/dl-o.jsonl" | head -1 | cut -d' ' -f1)" = 9 ] &&
    pass "resume = auto: the orphan delta-12 named, resumed at step 8" || fail "orphan: $(grep -m3 'delta' "$T/dl-o.out")"
expect_error "deltas come between full checkpoints" "$FS" train "$IN" $COMMON embedding.dynamic=on \
    output.checkpoint_dir="$T/dx" output.checkpoint_delta_every=3 train.checkpoint_every=4

# evaluation, recommend and export read the dynamic table as the dense one
# (an id never looked up gets the unadmitted row: here every item was)
E="train.final_eval=on train.max_steps=8"
run ev-dense 1 $E output.checkpoint_dir="$T/cd"
run ev-dyn 1 $E output.checkpoint_dir="$T/cy" embedding.dynamic=on
a=$(grep -o '"split":"test".*"ndcg@10":[0-9.e-]*' "$T/ev-dense.jsonl")
b=$(grep -o '"split":"test".*"ndcg@10":[0-9.e-]*' "$T/ev-dyn.jsonl")
[ -n "$a" ] && [ "$a" = "$b" ] && pass "test metrics as the dense table's" || fail "eval: $a / $b"
grep -q '"items.rows":2000,' "$T/ev-dyn.jsonl" && pass "every item has a row" || fail "not every item seen"
for x in cd cy; do
    "$MPIRUN" -np 2 "$FS" recommend "$T/$x/ckpt-8.h5" --top 5 -o "$T/rec-$x.csv" >/dev/null 2>&1 ||
        fail "recommend $x"
done
cmp -s "$T/rec-cd.csv" "$T/rec-cy.csv" && pass "recommend (P=2): as the dense table's" ||
    fail "recommend differs"
# keep_best: the test reloads best.h5 into the trained table, which holds
# rows then (the read empties it first): its metrics are those of a run
# stopped at the best step
B="train.keep_best=on train.final_eval=on train.eval_every=1 train.max_steps=12"
run kb-dyn 2 $B output.checkpoint_dir="$T/kby" embedding.dynamic=on
bs=$(sed -n 's/.*keep_best: testing .*best.h5 (epoch [0-9]*, step \([0-9]*\)).*/\1/p' "$T/kb-dyn.out")
run kb-stop 2 train.final_eval=on train.max_steps="${bs:-0}" embedding.dynamic=on
a=$(grep '"split":"test"' "$T/kb-dyn.jsonl" | grep -o '"hr@1".*')
b=$(grep '"split":"test"' "$T/kb-stop.jsonl" | grep -o '"hr@1".*')
[ -n "$bs" ] && [ -n "$a" ] && [ "$a" = "$b" ] &&
    pass "keep_best (P=2): best.h5 (step $bs) reloaded, its test as a run stopped there" ||
    fail "keep_best: best step '$bs': $a / $b"

# the run identity holds embedding.dynamic: resume = auto in a directory of
# the other kind's checkpoints is refused naming it; a policy (evict) may
# change on a resume
expect_error "embedding.dynamic: off there, on here" "$FS" train "$IN" $COMMON $E \
    output.checkpoint_dir="$T/cd" train.resume=auto embedding.dynamic=on train.max_steps=10
expect_error "embedding.dynamic: on there, off here" "$FS" train "$IN" $COMMON $E \
    output.checkpoint_dir="$T/cy" train.resume=auto train.max_steps=10
run ev-res 1 $E output.checkpoint_dir="$T/cy" train.resume=auto embedding.dynamic=on \
    embedding.evict=ttl:5 train.max_steps=10 train.final_eval=off
grep -q "resumed from $T/cy/ckpt-8.h5" "$T/ev-res.out" &&
    pass "resume = auto with another eviction policy: resumed" || fail "ev-res: $(tail -n 2 "$T/ev-res.out")"

# an explicit resume of the other kind's checkpoint: refused by the identity
# too, naming the file and the line (checkpoint_read's refusal by table name
# stays for a checkpoint that records no run)
expect_error "train.resume = $T/ck/ckpt-4.h5 is a checkpoint of another run (embedding.dynamic: on there, off here" \
    "$MPIRUN" -np 2 "$FS" train "$IN" $COMMON train.max_steps=8 features.item=brand \
    features.placement=sharded train.resume="$T/ck/ckpt-4.h5"
expect_error "train.resume = $T/cd/ckpt-8.h5 is a checkpoint of another run (embedding.dynamic: off there, on here" \
    "$MPIRUN" -np 2 "$FS" train "$IN" $COMMON train.max_steps=10 embedding.dynamic=on train.resume="$T/cd/ckpt-8.h5"

# refusals
expect_error "ttl:S needs S >= 1" "$FS" train "$IN" $COMMON embedding.dynamic=on embedding.evict=ttl:0
expect_error "expected none, ttl:S, lru or lfu" "$FS" train "$IN" $COMMON embedding.dynamic=on embedding.evict=fifo
expect_error "needs at least one row per shard" "$MPIRUN" -np 4 "$FS" train "$IN" $COMMON \
    embedding.dynamic=on embedding.capacity=3
expect_error "delta checkpoints are for dynamic tables" "$FS" train "$IN" $COMMON \
    output.checkpoint_delta_every=2 output.checkpoint_dir="$T/dy" train.checkpoint_every=4
expect_error "output.checkpoint_write = gathered is not available" "$FS" train "$IN" $COMMON \
    embedding.dynamic=on output.checkpoint_dir="$T/ckg" output.checkpoint_write=gathered
expect_error "checkpoints with parallel.overlap = prefetch and" "$FS" train "$IN" $COMMON \
    embedding.dynamic=on embedding.evict=ttl:3 output.checkpoint_dir="$T/ckp" parallel.overlap=prefetch
expect_error "train.loss = full scores every item of the dataset against its own row" \
    "$FS" train "$IN" $COMMON embedding.dynamic=on train.loss=full embedding.admit=2
expect_error "apply to dynamic tables" "$FS" train "$IN" $COMMON embedding.admit=3
expect_error "features.dynamic = nope: 'nope' names no feature" "$FS" train "$IN" $COMMON \
    features.item=brand features.dynamic=nope
expect_error "which is a sharded table: not with features.placement = replicated" "$FS" train \
    "$IN" $COMMON features.item=brand features.dynamic=brand features.placement=replicated
expect_error "takes only embedding.admit = 1" "$MPIRUN" -np 4 "$FS" train "$IN" $COMMON \
    embedding.dynamic=on parallel.embedding_group=2 embedding.evict=ttl:3
finish
