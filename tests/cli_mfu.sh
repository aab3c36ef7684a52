#!/bin/sh
# cli_mfu: the achieved FLOP/s and MFU of the progress lines against their
# formula (doc/training.md), not against time: every train event's gflops
# is its model FLOPs over its seconds, mfu that over the job's peak, the
# model FLOPs are f_tok x tokens + f_pair x attention pairs with f_tok and
# f_pair written out here from the model's shape, and the tokens and pairs
# of a step are those of its batch, computed from the dataset (one step an
# epoch: the batch is every training user). With device.peak_tflops the
# peak is that rate times the ranks; measured, it is positive. A ranking
# run also reports MLPerf DLRMv4's count (mlperf_gflops, mlperf_mfu) against
# its formula, on each progress line; a retrieval run does not.
. "$(dirname "$0")/lib.sh"
need_mpirun
tiny_data
have_h5py || { echo "SKIP: needs $PY with h5py"; exit 77; }
COMMON="data.path=$T/tiny.h5 train.batch_size=64 train.epochs=3 train.log_every=1 train.final_eval=off"
train() { np=$1; shift; timeout 300 "$MPIRUN" -np "$np" "$FS" train "$IN" $COMMON "$@"; }

check() { # METRICS MODEL PEAK_PER_RANK(0: measured) RANKS R BCE
    "$PY" - "$T/tiny.h5" "$@" <<'PYEOF'
import h5py, json, sys
import numpy as np
data, path, model, peak, ranks, R, bce = sys.argv[1:8]
peak, ranks, R, bce = float(peak), int(ranks), int(R), bce == "1"
d, layers, H, N, hold = 16, 1, 1, 32, 2           # input/tiny.in, data.split = loo
L = np.diff(h5py.File(data, "r")["offsets"][:])
L = np.minimum(L[L >= hold + 2] - hold - 1, N)      # the training positions per user
tokens, pairs = float(L.sum()), float((L * (L + 1) / 2).sum())
W = 10.0 if model == "hstu" else 12.0
rows = 2.0 if bce else R + 1.0
f_tok = 3 * (layers * (W * d * d + 40 * d) + 10 * d + 2 * d * rows + (0 if bce else 6 * rows))
f_pair = 4 * layers * (4 * d + 8 * H)
ev = [json.loads(l) for l in open(path)]
ev = [e for e in ev if e["event"] == "train"]
assert len(ev) == 3, f"{len(ev)} progress lines"
close = lambda a, b: abs(a - b) <= 1e-6 * max(abs(a), abs(b))
for e in ev:
    assert e["tokens"] == tokens and close(e["attn_pairs"], pairs), (e["tokens"], tokens)
    assert close(e["flops"], f_tok * tokens + f_pair * pairs), (e["flops"], f_tok * tokens + f_pair * pairs)
    assert close(e["gflops"], e["flops"] / e["interval_s"] / 1e9), "gflops = flops / seconds"
    assert close(e["mfu"], e["gflops"] / e["peak_gflops"]), "mfu = gflops / peak"
    if peak > 0:
        assert close(e["peak_gflops"], peak * 1e3 * ranks), e["peak_gflops"]
    else:
        assert e["peak_gflops"] > 0 and e["mfu"] > 0
PYEOF
}

expect_ok train 2 device.peak_tflops=0.25 output.metrics="$T/h.jsonl"
grep -q "GFLOP/s .* MFU .*%" "$T/out" "$T/err" || fail "no GFLOP/s and MFU on the progress line"
cat "$T/out" "$T/err" >"$T/h.out" # the retrieval run's lines, for the ranking check below
check "$T/h.jsonl" hstu 0.25 2 16 0 && pass "hstu at P=2: gflops and mfu as the formula" ||
    fail "hstu at P=2: gflops or mfu against the formula"
expect_ok train 1 model.type=sasrec train.loss=bce output.metrics="$T/s.jsonl"
check "$T/s.jsonl" sasrec 0 1 1 1 && pass "sasrec, BCE, measured peak: as the formula" ||
    fail "sasrec at P=1: gflops or mfu against the formula"
expect_error "device.peak_tflops" train 1 device.peak_tflops=-1

# ranking: MLPerf DLRMv4's count beside ours (model/flops_mlperf.h, doc/ranking.md):
# mlperf_flops = f_pos x tokens + f_sq x sum s^2 (sum s^2 = 2 pairs - tokens), f_pos
# and f_sq written out here from d, H, qk = v = d / H and the layers; its GFLOP/s
# over the interval and its MFU over the same peak; on the progress line. A
# retrieval run (the hstu one above) has neither, nor a SASRec ranking run.
"$FS" data gen --users 64 --items 200 --length uniform:5,40 --timestamps --labels planted \
    -o "$T/p.h5" >/dev/null 2>&1 || fail "data gen --labels planted"
expect_ok train 2 data.path="$T/p.h5" train.task=ranking train.tasks=click:binary:click \
    device.peak_tflops=0.25 output.metrics="$T/r.jsonl"
n=$(grep -c "MFU [0-9.]*% mlperf_gflops [0-9.]* mlperf_mfu [0-9.]*%" "$T/out" "$T/err" |
    awk -F: '{ s += $NF } END { print s }')
[ "$n" = 3 ] && pass "ranking: mlperf_gflops and mlperf_mfu on each progress line" ||
    fail "ranking: $n progress lines with mlperf_gflops, expected 3"
"$PY" - "$T/r.jsonl" "$T/h.jsonl" <<'PYEOF' && pass "ranking: mlperf_flops, mlperf_gflops, mlperf_mfu as the formula; retrieval: none" ||
import json, sys
d, layers, H = 16, 1, 1                              # input/tiny.in
qk = v = d // H
f_pos = layers * (6 * d * H * (2 * qk + 2 * v) + 6 * (3 * H * v) * d)
f_sq = layers * 3.5 * H * (qk + v)
close = lambda a, b: abs(a - b) <= 1e-6 * max(abs(a), abs(b))
ev = [e for e in map(json.loads, open(sys.argv[1])) if e["event"] == "train"]
assert len(ev) == 3, f"{len(ev)} progress lines"
for e in ev:
    want = f_pos * e["tokens"] + f_sq * (2 * e["attn_pairs"] - e["tokens"])
    assert e["mlperf_flops"] > 0 and close(e["mlperf_flops"], want), (e["mlperf_flops"], want)
    assert close(e["mlperf_gflops"], e["mlperf_flops"] / e["interval_s"] / 1e9)
    assert e["mlperf_gflops"] > 0 and close(e["mlperf_mfu"], e["mlperf_gflops"] / e["peak_gflops"])
for e in map(json.loads, open(sys.argv[2])):
    assert not any(k.startswith("mlperf") for k in e), e
PYEOF
    fail "ranking: the MLPerf count against its formula, or retrieval reporting it"
grep -q "mlperf_gflops" "$T/h.out" && fail "retrieval: mlperf_gflops on its progress line"
# the benchmark's count is HSTU's: a SASRec ranking run has none
expect_ok train 1 data.path="$T/p.h5" train.task=ranking train.tasks=click:binary:click \
    model.type=sasrec output.metrics="$T/rs.jsonl"
if grep -q "mlperf" "$T/rs.jsonl" "$T/out" "$T/err"; then
    fail "sasrec ranking: the MLPerf (HSTU) count reported"
else
    pass "sasrec ranking: no MLPerf count (it is HSTU's)"
fi
[ $failures -eq 0 ]
