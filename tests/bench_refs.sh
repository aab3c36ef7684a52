#!/bin/sh
# bench_refs: bench/refs.sh (doc/benchmarks.md, "Against the reference
# codes") without the reference codes, which this machine does not have:
# its usage; its refusals of a missing or wrong path (no ML-1M directory,
# no ratings.dat, a peer's directory that is not a git clone or not a
# clone of it, no users.dat for the HSTU research code, a bad --epochs or
# --only); its freescale half on a small ratings.dat in ML-1M's format
# (100 users, 1 epoch: both models' rows with a time and the machine,
# BLAS and date lines); and its SASRec.pytorch half's plumbing against a
# stand-in clone whose python/main.py checks the arguments and the data
# file refs.sh wrote (ml-1m.txt: every rating, users' events by time, items
# numbered by first appearance) and torch's threads (OMP_NUM_THREADS: the
# cores it may use; torch's own default was 1 on a 2-core VM) and prints
# the reference's loss lines; the HSTU research code's half refusing to
# start, naming them, when the Python lacks the modules it imports.
. "$(dirname "$0")/lib.sh"
need_mpirun
R="$TOP_SRCDIR/bench/refs.sh"
export FREESCALE="$FS"
mkdir -p "$T/ml"
# 100 users, 15-34 ratings each, at increasing times (one tie per user)
awk 'BEGIN { srand(7); for (u = 1; u <= 100; u++) { n = 15 + int(rand() * 20); t = 978300000 + u
    for (k = 0; k < n; k++) { if (k != 3) t += 1 + int(rand() * 500)
        printf "%d::%d::%d::%d\n", u, 1 + int(rand() * 80), 1 + int(rand() * 5), t } } }' > "$T/ml/ratings.dat"
"$R" --help > "$T/help" 2>&1
grep -q 'git clone https://github.com/pmixer/SASRec.pytorch' "$T/help" &&
    grep -q 'git clone https://github.com/facebookresearch/generative-recommenders' "$T/help" &&
    pass "usage names the clones" || fail "usage: $(head -n 5 "$T/help")"
expect_error "no ML-1M directory given" env -u ML1M_DIR "$R"
expect_error "'$T/none' is not a directory" "$R" --ml1m "$T/none"
expect_error "has no ratings.dat" "$R" --ml1m "$T"
expect_error "no clone of pmixer/SASRec.pytorch given (--sasrec DIR or SASREC_PYTORCH" \
    env -u SASREC_PYTORCH "$R" --ml1m "$T/ml" --only sasrec
expect_error "pmixer/SASRec.pytorch: '$T/ml' is not a git clone" "$R" --ml1m "$T/ml" --only sasrec --sasrec "$T/ml"
git init -q "$T/gr" && touch "$T/gr/main.py"
expect_error "facebookresearch/generative-recommenders: '$T/gr' has no configs/ml-1m/hstu-sampled-softmax-n128-final.gin" \
    "$R" --ml1m "$T/ml" --only hstu --gr "$T/gr"
mkdir -p "$T/gr/configs/ml-1m" && touch "$T/gr/configs/ml-1m/hstu-sampled-softmax-n128-final.gin"
expect_error "has no users.dat (the HSTU research code reads it)" "$R" --ml1m "$T/ml" --only hstu --gr "$T/gr"
expect_error "--epochs 'x': give a number" "$R" --epochs x --ml1m "$T/ml"
expect_error "--only: 'peers' is not freescale, sasrec or hstu" "$R" --only peers --ml1m "$T/ml"
# the freescale half
if "$R" --ml1m "$T/ml" --only freescale --epochs 1 > "$T/out" 2>&1; then
    cat "$T/out"
    grep -Eq '^refs: [0-9-]+ [0-9:]+ UTC; .*CPUs; load average .*; ML-1M .*\([0-9]+ ratings\); 1 epochs a run' "$T/out" &&
        grep -q '^BLAS: freescale OpenBLAS .*kernels' "$T/out" &&
        grep -Eq '^sasrec +freescale [0-9a-f]+ P = 2 +[0-9]+\.[0-9]+ +-$' "$T/out" &&
        grep -Eq '^hstu +freescale [0-9a-f]+ P = 2 +[0-9]+\.[0-9]+ +-$' "$T/out" &&
        pass "the freescale half: both models' epoch times, machine, BLAS, date" ||
        fail "the freescale half's output"
else
    fail "refs.sh --only freescale: $(tail -n 20 "$T/out")"
fi
# the SASRec.pytorch half's plumbing against a stand-in clone
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
    git init -q "$T/sas" && mkdir -p "$T/sas/python" && touch "$T/sas/README.md"
    cat > "$T/sas/python/main.py" <<'PYEOF'
# stand-in for pmixer/SASRec.pytorch's main.py: checks what refs.sh gives it
import os
import sys
a = dict(x[2:].split("=", 1) for x in sys.argv[1:])
want = {"dataset": "ml-1m", "maxlen": "200", "dropout_rate": "0.2", "device": "cpu", "num_epochs": "2"}
assert all(a.get(k) == v for k, v in want.items()), a
assert os.environ.get("OMP_NUM_THREADS") == os.environ["REFS_TEST_THREADS"], "OMP_NUM_THREADS"
lines = [tuple(map(int, l.split())) for l in open("data/ml-1m.txt")]
src = sorted((int(u), int(t), n, int(i)) for n, (u, i, _, t) in
             enumerate(l.strip().split("::") for l in open(os.environ["REFS_TEST_RATINGS"])))
num = {}
assert lines == [(u, num.setdefault(i, len(num) + 1)) for u, _, _, i in src], "ml-1m.txt"
for e in (1, 2):
    for s in range(3):
        print("loss in epoch %d iteration %d: 0.5" % (e, s))
print("Done")
PYEOF
    git -C "$T/sas" add -A >/dev/null
    if REFS_TEST_RATINGS="$T/ml/ratings.dat" REFS_TEST_THREADS=$(nproc) PYTHON=/usr/bin/python3 \
            "$R" --ml1m "$T/ml" --only sasrec --sasrec "$T/sas" --epochs 2 > "$T/out" 2>&1; then
        cat "$T/out"
        grep -Eq '^sasrec +pmixer/SASRec.pytorch [0-9a-f?]+ +[0-9]+\.[0-9]+ *$' "$T/out" &&
            grep -q '^BLAS: freescale (not run); peers torch ' "$T/out" &&
            pass "the SASRec.pytorch half: arguments, ml-1m.txt, its epoch time" ||
            fail "the SASRec.pytorch half's output"
    else
        fail "refs.sh --only sasrec with a stand-in: $(tail -n 20 "$T/out")"
    fi
else
    echo "(no torch and numpy: the SASRec.pytorch half not checked)"
fi
# the HSTU research code's half: the modules it imports, before anything runs
lacks=$(/usr/bin/python3 -c 'import importlib.util as u
print(" ".join(m for m in ("fbgemm_gpu", "gin", "absl", "pandas", "tensorboard") if u.find_spec(m) is None))' 2>/dev/null)
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null && [ -n "$lacks" ]; then
    echo 'users' > "$T/ml/users.dat" && echo 'movies' > "$T/ml/movies.dat"
    git -C "$T/gr" add -A >/dev/null
    expect_error "the HSTU research code needs Python modules that /usr/bin/python3 lacks: $lacks" \
        env PYTHON=/usr/bin/python3 "$R" --ml1m "$T/ml" --only hstu --gr "$T/gr" --epochs 1
else
    echo "(torch missing or no module missing: the HSTU research code's module check not exercised)"
fi
finish
