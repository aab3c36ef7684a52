#!/bin/sh
# bench_roofline: bench/roofline.py's arithmetic (doc/benchmarks.md, "The
# roofline") against the same done here by hand, on inputs whose every
# figure is known. The run: HSTU, d = 10, 1 layer, 1 head, 1 negative, no
# dropout, batch 8 on 2 ranks; progress lines at steps 4, 8, 12 (the first
# left out), 8e6 tokens, 16e6 pairs and 8e9 FLOPs an interval: per rank and
# step T = 1e6 tokens, S = 2e6 pairs, B = 4 sequences (Lr = sqrt(2 S / B) =
# 1000), 1e9 FLOPs. The rates: a bandwidth so high that no byte counts,
# sgemm 1, 2, 4, 8, 16 GFLOP/s at the five projection shapes, 3 at the
# attention tile, 5 at the loss' [T, d] x [d, 2]. By hand (ms a step):
#   projections  5 x 2 T d^2 / 1e9 (u, v, q, k, out) + 5 x 2 T d^2 / 2e9 (the
#                input gradients) + 5 x 2 T d^2 / 4e9 (the weight gradients)
#                + 2 T d / 8e9 (the bias) + 2 T d / 16e9 (its gradient)
#                = 1000 + 500 + 250 + 2.5 + 1.25 = 1753.75
#   attention    4 (4 d + 8) S / 3e9 = 128
#   loss         3 T (2 d 2 + 6 x 2) / 5e9 = 31.2
#   step         1912.95; MFU at the bounds: 1e9 FLOP / 1.91295 s over a
#                rank's peak (20 GFLOP/s summed, 10 a rank) = 5.2%
# The profiles (two ranks, the same; 1 ms a sample, 12 steps): before the
# first train_step sample 2 start-up samples and after the last 1 (3 ms, left
# out); inside, 6 GEMM samples under model_gemm_rows (projections), 2
# under SASRec's attention (its own gemm), 4 whose chains end in OpenBLAS
# (shared 6:2 as the whole ones), 3 in cpu_layernorm_fwd under the forward,
# 1 page fault, 2 in Open MPI: per step projections 9/12, attention 3/12,
# element-wise 3/12, page faults 1/12, MPI 2/12 ms.
. "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import json, argparse' 2>/dev/null || { echo "SKIP: no python3"; exit 77; }
R="$TOP_SRCDIR/bench/roofline.py"
cat > "$T/m.jsonl" <<'JSON'
{"event":"params","params":{"model.type":"hstu","model.dim":"10","model.layers":"1","model.heads":"1","model.dropout":"0","train.loss":"softmax","train.negatives":"1","train.batch_size":"8"}}
{"event":"train","step":4,"samples_per_s":1,"mfu":0.9,"tokens":1,"attn_pairs":1,"flops":1,"peak_gflops":20,"rows_bytes":40,"grads_bytes":40,"dense_bytes":400,"forward_ms":999,"forward_mpi_ms":0,"wait_ms":9}
{"event":"train","step":8,"samples_per_s":4,"mfu":0.01,"tokens":8e6,"attn_pairs":16e6,"flops":8e9,"peak_gflops":20,"rows_bytes":40,"grads_bytes":40,"dense_bytes":400,"forward_ms":1500,"forward_mpi_ms":100,"wait_ms":100}
{"event":"train","step":12,"samples_per_s":4,"mfu":0.01,"tokens":8e6,"attn_pairs":16e6,"flops":8e9,"peak_gflops":20,"rows_bytes":40,"grads_bytes":40,"dense_bytes":400,"forward_ms":1500,"forward_mpi_ms":100,"wait_ms":100}
JSON
shapes=$("$PY" "$R" --shapes "$T/m.jsonl")
want="triad:201326592 gemm:0,0,1000000,10,1 gemm:0,0,1000000,10,10 gemm:0,1,1000,1000,10 gemm:0,1,1000000,2,10 gemm:0,1,1000000,10,10 gemm:1,0,1,10,1000000 gemm:1,0,10,10,1000000 gemm:0,0,512,512,512"
[ "$shapes" = "$want" ] && pass "--shapes: $shapes" || fail "--shapes: $shapes, want $want"
cat > "$T/rates" <<'EOF2'
blas OpenBLAS 0.3.21 (pthreads), kernels SkylakeX (chosen for this CPU)
triad 201326592 1000000000
gemm 0,0,1000000,10,10 1
gemm 0,1,1000000,10,10 2
gemm 1,0,10,10,1000000 4
gemm 0,0,1000000,10,1 8
gemm 1,0,1,10,1000000 16
gemm 0,1,1000,1000,10 3
gemm 0,1,1000000,2,10 5
gemm 0,0,512,512,512 200
EOF2
F=/work/x/freescale
BL=/usr/lib/x86_64-linux-gnu/openblas-pthread/libopenblasp-r0.3.21.so
sample() { # TIME FRAME... (each "symbol dso"): one sample of 1 ms
    printf '%s:    1000000 \n' "$1"; shift
    for fr in "$@"; do printf '\t          1234 %s (%s)\n' "${fr% *}" "${fr#* }"; done
    printf '\n'
}
step="train_step $F"
{
    sample 1.0 "_dl_start /usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"
    sample 1.5 "clear_page_erms [kernel.kallsyms]" "exc_page_fault [kernel.kallsyms]" "train_main $F"
    for t in 2.0 2.1 2.2 2.3 2.4 2.5; do
        sample $t "sgemm_kernel_SKYLAKEX $BL" "cblas_sgemm $BL" "cpu_gemm $F" \
            "model_gemm_rows $F" "$step" "main $F"
    done
    for t in 3.0 3.1; do
        sample $t "sgemm_small_kernel_nn_SKYLAKEX $BL" "cblas_sgemm $BL" "gemm (inlined)" \
            "attn_fwd (inlined)" "cpu_sasrec_attn_fwd $F" "phase_backward (inlined)" "$step" "main $F"
    done
    for t in 2.6 2.7 3.2 3.3; do sample $t "sgemm_kernel_SKYLAKEX $BL" "sgemm_nn $BL"; done
    for t in 5.0 5.1 5.2; do
        sample $t "cpu_layernorm_fwd (inlined)" "hstu_forward $F" "phase_forward_loss (inlined)" \
            "$step" "main $F"
    done
    sample 6.0 "clear_page_erms [kernel.kallsyms]" "exc_page_fault [kernel.kallsyms]" \
        "cpu_layernorm_fwd $F" "$step" "main $F"
    sample 7.0 "[unknown] mca_btl_vader.so" "$step" "main $F"
    sample 7.5 "opal_progress libopen-pal.so.40.30.2" "[unknown] mca_btl_vader.so" "$step" "main $F"
    sample 8.0 "_IO_cleanup /usr/lib/x86_64-linux-gnu/libc.so.6"
} > "$T/prof"
out=$("$PY" "$R" --metrics "$T/m.jsonl" --rates "$T/rates" --src "$TOP_SRCDIR" "$T/prof" "$T/prof" 2>&1)
echo "$out"
col() { # CLASS-PREFIX FIELD-FROM-THE-END: a number of a table row
    echo "$out" | awk -v p="$1" -v k="$2" 'index($0, p) == 1 { n = split($0, w, " +"); print w[n - k]; exit }'
}
check() { # WHAT GOT WANT
    [ "$2" = "$3" ] && pass "$1 = $2" || fail "$1 = $2, want $3"
}
# the class rows end: CPU ms, bound ms, bound/ms, bound by
check "projections bound" "$(col 'projections (GEMM)' 2)" 1753.75
check "projections CPU ms" "$(col 'projections (GEMM)' 3)" 0.67
check "attention bound" "$(col attention 2)" 128.00
check "attention CPU ms" "$(col attention 3)" 0.33
check "loss bound" "$(col 'loss ' 2)" 31.20
check "element-wise CPU ms" "$(col element-wise 3)" 0.25
check "page faults CPU ms" "$(col 'kernel (page faults)' 3)" 0.08
check "MPI CPU ms" "$(col 'MPI ' 3)" 0.17
check "step's sum of bounds" "$(col 'step  ' 0)" 1912.95
check "forward CPU ms" "$(col 'forward ' 1)" 0.25
check "forward wall ms" "$(col 'forward ' 3)" 1500.00
check "backward CPU ms" "$(col 'backward ' 1)" 0.33
check "the rest's CPU ms" "$(col 'optimizer + rest' 1)" 0.92
echo "$out" | grep -q 'at the step.s sum of bounds 5\.2%' && pass "MFU at the bounds 5.2%" ||
    fail "MFU at the bounds: $(echo "$out" | grep MFU)"
echo "$out" | grep -q 'outside the steps (start-up, end) 3 CPU ms a rank; chains perf cut short 22%' &&
    pass "3 ms outside the steps, 4 of 18 cut short" ||
    fail "outside the steps: $(echo "$out" | grep MFU)"
head -n 2 "$T/m.jsonl" > "$T/short.jsonl"
expect_error "1 progress lines; the roofline needs >= 2" "$PY" "$R" --shapes "$T/short.jsonl"
grep -v '^gemm 0,1,1000,' "$T/rates" > "$T/r2"
expect_error "no sgemm rate at (0, 1, 1000, 1000, 10)" "$PY" "$R" --metrics "$T/m.jsonl" --rates "$T/r2" "$T/prof"
echo "bogus line" > "$T/bad"
expect_error "is not a line of perf script" "$PY" "$R" --metrics "$T/m.jsonl" --rates "$T/rates" "$T/bad"
finish
