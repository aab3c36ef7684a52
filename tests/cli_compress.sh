#!/bin/sh
# cli_compress: the wire codecs of the embedding exchanges in training
# (parallel.rows_codec, parallel.grads_codec; doc/compression.md), 10 steps
# of tiny.in (d = 16; the deviations below measured over 20 steps):
#   - fp32 named explicitly is the default, to the printed digits;
#   - a rows codec gives the same losses at P = 1, 2 and 4 (every rank
#     encodes every row it serves, itself included): to 1e-5 for fp8 and
#     int8 (measured 1e-6), 5e-5 for bf16 and fp16 (measured 1.7e-5: the
#     first steps agree to the digit, then fp32's own P-to-P differences in
#     the summed gradients, ~1e-8, flip a rounding of the finer formats now
#     and then);
#   - a gradient codec encodes each requester's partial sum, which depends
#     on how the batch is spread over the ranks, so P = 1 and 2 agree only
#     to the codec's precision (bounds a little above the measured
#     deviations: fp16 6e-5, bf16 5e-4, int8 1e-3, fp8 5e-3); runs repeat
#     exactly;
#   - the byte counters per step: rows and gradients at a codec's size
#     relative to fp32 (bf16 = 1/2, fp16 = 36/64, fp8 = 20/64, int8 =
#     24/64 at d = 16), none at P = 1, none to other nodes on one node, all
#     of them with debug.node_size = 1; the progress line shows them;
#     each node's bytes to other nodes (xsent_KIND.N) sum to the table's
#     (4 ranks on 2 nodes, prioritized and prefetch);
#   - subspace tables: k = d with the identity basis is the plain table to
#     the printed digits (evaluation and Adam included); k = 8 gives the
#     same losses on P = 1, 2, 4 and sends k values per row; its checkpoint
#     resumes on another P; refused: k > d, a plain checkpoint for a
#     subspace table and the other way round, another k.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
COMMON="data.path=$T/tiny.h5 device.type=cpu train.epochs=10 train.max_steps=10 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }
# the last train line's value of a metrics key
last() { grep '"event":"train"' "$1" | tail -1 | grep -o "\"$2\":[^,}]*" | cut -d: -f2; }

expect_ok train 2 output.metrics="$T/default.jsonl"
grep -q 'bytes/step rows [0-9]* grads [0-9]*' "$T/err" "$T/out" &&
    pass "progress line shows bytes per step" || fail "no bytes/step on the progress line"
expect_ok train 2 parallel.rows_codec=fp32 parallel.grads_codec=fp32 output.metrics="$T/fp32.jsonl"
same_losses "$T/default.jsonl" "$T/fp32.jsonl" "fp32 named = the default" 0 0

for cd in bf16 fp16 fp8 int8; do
    tol=1e-5; case $cd in bf16 | fp16) tol=5e-5 ;; esac
    for np in 1 2 4; do
        expect_ok train $np parallel.rows_codec=$cd output.metrics="$T/r-$cd-$np.jsonl"
    done
    for np in 2 4; do
        same_losses "$T/r-$cd-1.jsonl" "$T/r-$cd-$np.jsonl" "rows_codec=$cd: P=$np vs P=1" 0 $tol
    done
done
expect_ok train 1 model.type=sasrec train.loss=bce parallel.rows_codec=int8 output.metrics="$T/s1.jsonl"
expect_ok train 4 model.type=sasrec train.loss=bce parallel.rows_codec=int8 output.metrics="$T/s4.jsonl"
same_losses "$T/s1.jsonl" "$T/s4.jsonl" "sasrec rows_codec=int8: P=4 vs P=1" 0 1e-5
# a codec changes the losses (it is applied): fp8 rows differ from fp32's
l32=$(last "$T/default.jsonl" loss); l8=$(last "$T/r-fp8-2.jsonl" loss)
[ "$l32" != "$l8" ] && pass "fp8 rows change the loss ($l32 vs $l8)" || fail "fp8 rows had no effect"

for spec in fp16:2e-4 bf16:2e-3 int8:5e-3 fp8:2e-2; do
    cd=${spec%%:*} tol=${spec#*:}
    for np in 1 2; do
        expect_ok train $np parallel.grads_codec=$cd output.metrics="$T/g-$cd-$np.jsonl"
    done
    same_losses "$T/g-$cd-1.jsonl" "$T/g-$cd-2.jsonl" "grads_codec=$cd: P=2 vs P=1" 0 $tol
done
expect_ok train 2 parallel.grads_codec=bf16 output.metrics="$T/g-bf16-2b.jsonl"
same_losses "$T/g-bf16-2.jsonl" "$T/g-bf16-2b.jsonl" "grads_codec=bf16 repeats exactly" 0 0

# bytes per step against fp32's (the same ids every step, whatever the codec)
r32=$(last "$T/default.jsonl" rows_bytes); g32=$(last "$T/default.jsonl" grads_bytes)
[ "$r32" = "$g32" ] && [ "$r32" != 0 ] && pass "fp32: rows and gradient bytes $r32 per step" ||
    fail "fp32 bytes: rows $r32 grads $g32"
ratio_is() { # FILE KEY WANT NAME
    v=$(last "$1" "$2")
    awk -v v="$v" -v b="$r32" -v w="$3" 'BEGIN { exit !(b > 0 && v / b == w) }' &&
        pass "$4: $2 $v = $3 of fp32's $r32" || fail "$4: $2 $v, fp32 $r32, expected ratio $3"
}
ratio_is "$T/r-bf16-2.jsonl" rows_bytes 0.5 bf16
ratio_is "$T/r-fp16-2.jsonl" rows_bytes 0.5625 fp16
ratio_is "$T/r-fp8-2.jsonl" rows_bytes 0.3125 fp8
ratio_is "$T/r-int8-2.jsonl" rows_bytes 0.375 int8
ratio_is "$T/r-int8-2.jsonl" grads_bytes 1 "int8 rows, fp32 gradients"
ratio_is "$T/g-int8-2.jsonl" grads_bytes 0.375 "int8 gradients"
ratio_is "$T/g-int8-2.jsonl" rows_bytes 1 "int8 gradients, fp32 rows"
[ "$(last "$T/r-bf16-1.jsonl" rows_bytes)" = 0 ] && pass "P=1: no bytes" || fail "P=1 sends bytes"
[ "$(last "$T/default.jsonl" rows_bytes_xnode)" = 0 ] && pass "one node: none to other nodes" ||
    fail "bytes to other nodes on one node"
rr=$(last "$T/default.jsonl" rows_ratio)
awk -v r="$rr" 'BEGIN { exit !(r > 0 && r < 1) }' && pass "de-duplication: rows ratio $rr" ||
    fail "rows_ratio $rr"
expect_ok train 2 debug.node_size=1 train.max_steps=3 output.metrics="$T/nodes.jsonl"
[ "$(last "$T/nodes.jsonl" rows_bytes_xnode)" = "$(last "$T/nodes.jsonl" rows_bytes)" ] &&
    pass "debug.node_size=1: every byte to another node" || fail "node_size=1 counters"
# the bytes each node sent to other nodes (xsent_KIND.N, bench/bound.py)
# against the table's own counting: 4 ranks on 2 nodes, by the comm
# counters the same bytes per step as rows_bytes_xnode and grads_bytes_xnode,
# with prioritized and with prefetch (next step's rows counted per lookup);
# step 6's line (the last one's interval posts no next step's ids)
at() { grep '"event":"train"' "$1" | grep "\"step\":$2," | grep -o "\"$3\":[^,}]*" | cut -d: -f2; }
for ov in prioritized prefetch; do
    f=$T/xs-$ov.jsonl
    expect_ok train 4 debug.node_size=2 parallel.overlap=$ov train.max_steps=7 train.log_every=3 \
        output.metrics="$f"
    x0=$(at "$f" 6 xsent_rows.0) x1=$(at "$f" 6 xsent_rows.1)
    g0=$(at "$f" 6 xsent_grads.0) g1=$(at "$f" 6 xsent_grads.1)
    if awk -v a="$x0" -v b="$x1" -v c="$g0" -v d="$g1" -v r="$(at "$f" 6 rows_bytes_xnode)" \
            -v g="$(at "$f" 6 grads_bytes_xnode)" -v i="$(at "$f" 6 xsent_ids.0)" \
            -v n="$(at "$f" 6 dense_bytes)" 'BEGIN {
            exit !(a > 0 && b > 0 && (a + b - r)^2 < 1e-6 * r * r && (c + d - g)^2 < 1e-6 * g * g &&
                   i > 0 && n > 0) }' &&
        [ -z "$(at "$f" 6 xsent_rows.2)" ]; then
        pass "$ov: 2 nodes' bytes to other nodes: rows $x0 + $x1, gradients $g0 + $g1 = the table's"
    else
        fail "$ov: xsent at step 6: $(grep '"step":6,' "$f" | grep -o '"[a-z_]*bytes[a-z_]*":[^,]*\|"xsent[^,]*' | tr '\n' ' ')"
    fi
done
expect_error "parallel.rows_codec" train 1 parallel.rows_codec=fp4

# subspace tables (embedding.subspace_k): k = d with the identity basis and
# F = 0 is the plain table, to the printed digits, evaluation included
# (the shard's rows rebuilt for ranking); with Adam too
ID="embedding.subspace_k=16 embedding.subspace_basis=identity"
expect_ok train 2 train.final_eval=on output.metrics="$T/plain-eval.jsonl"
expect_ok train 2 train.final_eval=on $ID output.metrics="$T/id-eval.jsonl"
same_losses "$T/plain-eval.jsonl" "$T/id-eval.jsonl" "subspace k = d, identity = plain" 0 0
e1=$(grep '"split":"test"' "$T/plain-eval.jsonl" | grep -o '"ndcg@10":[^,]*')
e2=$(grep '"split":"test"' "$T/id-eval.jsonl" | grep -o '"ndcg@10":[^,]*')
[ -n "$e1" ] && [ "$e1" = "$e2" ] && pass "subspace identity: the same test NDCG@10 ($e1)" ||
    fail "subspace identity: test $e2, plain $e1"
expect_ok train 1 embedding.optimizer=adam output.metrics="$T/plain-adam.jsonl"
expect_ok train 1 embedding.optimizer=adam $ID output.metrics="$T/id-adam.jsonl"
same_losses "$T/plain-adam.jsonl" "$T/id-adam.jsonl" "subspace identity with adam = plain" 0 0
# k = 8 (a random basis): the same losses on any P, k values per row on the wire
for np in 1 2 4; do
    expect_ok train $np embedding.subspace_k=8 output.metrics="$T/k8-$np.jsonl"
done
same_losses "$T/k8-1.jsonl" "$T/k8-2.jsonl" "subspace k=8: P=2 vs P=1" 0 1e-5
same_losses "$T/k8-1.jsonl" "$T/k8-4.jsonl" "subspace k=8: P=4 vs P=1" 0 1e-5
ratio_is "$T/k8-2.jsonl" rows_bytes 0.5 "subspace k=8 of d=16"
ratio_is "$T/k8-2.jsonl" grads_bytes 0.5 "subspace k=8 of d=16"
expect_ok train 2 embedding.subspace_k=8 parallel.rows_codec=int8 output.metrics="$T/k8i.jsonl"
ratio_is "$T/k8i.jsonl" rows_bytes 0.25 "subspace k=8 with int8 rows (8 + 8 bytes)"
expect_error "embedding.subspace_k = 17 exceeds model.dim = 16" train 1 embedding.subspace_k=17
# a subspace checkpoint (c[i] and its state) resumes on another rank count:
# 5 steps at P = 2, then to 10 at P = 3, equal to the uninterrupted P = 1
# run; it is refused for a plain table and for another k
expect_ok train 2 embedding.subspace_k=8 train.max_steps=5 output.checkpoint_dir="$T/cks" \
    output.metrics="$T/k8-res.jsonl"
expect_ok train 3 embedding.subspace_k=8 train.resume=auto output.checkpoint_dir="$T/cks" \
    output.metrics="$T/k8-res.jsonl"
same_losses "$T/k8-1.jsonl" "$T/k8-res.jsonl" "subspace k=8: resumed P=2 -> 3 vs uninterrupted" 0 1e-5
expect_error "resume with embedding.subspace_k = 8" train 1 train.resume="$T/cks/ckpt-5.h5"
expect_error "embedding.subspace_k = 8 in the checkpoint, 4 in this run" \
    train 1 embedding.subspace_k=4 train.resume="$T/cks/ckpt-5.h5"
# a plain checkpoint (codec settings recorded) is refused for a subspace table
expect_ok train 1 train.max_steps=2 parallel.rows_codec=int8 output.checkpoint_dir="$T/ck"
if command -v h5dump >/dev/null; then
    h5dump -a rows_codec "$T/ck/ckpt-2.h5" 2>/dev/null | grep -q '"int8"' &&
        pass "checkpoint records rows_codec" || fail "no rows_codec attribute"
fi
expect_error "a plain table's checkpoint, this run trains a subspace table" \
    "$FS" recommend "$T/ck/ckpt-2.h5" "$IN" data.path="$T/tiny.h5" device.type=cpu \
    embedding.subspace_k=8 --top 5 -o "$T/recs.csv"
finish
