#!/bin/sh
# refs: freescale against the two reference codes, side by side on the same
# cores and the same ML-1M (doc/benchmarks.md, "Against the reference
# codes"): seconds per epoch of pmixer/SASRec.pytorch against freescale's
# SASRec (input/ml1m-sasrec.in) and of the HSTU research code
# (facebookresearch/generative-recommenders) against freescale's HSTU
# (input/ml1m-hstu.in), freescale at P = 2, and their ratios, with the
# machine, the BLAS kernels of each and the date. It downloads nothing:
# the clones and the data are the user's.
#
#   bench/refs.sh [--epochs N] [--cores LIST] [--only WHAT] \
#       --sasrec SASREC_DIR --gr GR_DIR --ml1m ML1M_DIR
#
# or the same paths in SASREC_PYTORCH, GENERATIVE_RECOMMENDERS, ML1M_DIR.
#   --epochs N     epochs of every run (default 3); an epoch's time is the
#                  median over epochs 2..N (the first is the warm-up; N = 1:
#                  the one)
#   --cores LIST   run everything under taskset -c LIST (default: the
#                  cores this shell may use, unpinned)
#   --only WHAT    a comma list of freescale, sasrec, hstu (default all
#                  three: freescale both models; sasrec, hstu the peers);
#                  --only freescale needs --ml1m only
#   ML1M_DIR       MovieLens-1M unpacked: ratings.dat (users.dat and
#                  movies.dat too for the HSTU research code)
#
# Setting the peers up (once, by the user; nothing here fetches them):
#   git clone https://github.com/pmixer/SASRec.pytorch
#   git clone https://github.com/facebookresearch/generative-recommenders
#   ML-1M: https://files.grouplens.org/datasets/movielens/ml-1m.zip, unzipped
#   Python with torch and numpy: Debian's python3-torch python3-numpy, or a
#   venv (python3 -m venv ~/refs-venv && ~/refs-venv/bin/pip install torch
#   numpy); the HSTU research code also needs pandas, gin-config, absl-py,
#   tensorboard and fbgemm-gpu-cpu (pip; its requirements.txt asks for torch
#   >= 2.6 and fbgemm_gpu >= 1.1), or Debian's python3-pandas and
#   python3-absl (Debian packages no gin-config, tensorboard or fbgemm);
#   the script names the modules missing before it starts it. PYTHON=path
#   picks the interpreter (default python3).
#
# How each runs (its README's ML-1M settings):
#   SASRec.pytorch  main.py --dataset=ml-1m --train_dir=refs --maxlen=200
#                   --dropout_rate=0.2 --device=cpu --num_epochs=N, on
#                   ml-1m.txt written here from ratings.dat (users' events
#                   by time, items numbered by first appearance) in a
#                   scratch directory; epoch e's time from the last loss
#                   line of epoch e - 1 to that of e (all its steps; its
#                   end-of-run save left out; epoch 1 from its first loss
#                   line; no evaluation before epoch 20)
#   research HSTU   main.py --gin_config_file=configs/ml-1m/hstu-sampled-
#                   softmax-n128-final.gin with train_fn.num_epochs = N and
#                   eval_interval above the run's steps, on a copy of the
#                   clone in a scratch directory with tmp/movielens1m.zip
#                   made from ML1M_DIR (so its preprocessing finds it and
#                   downloads nothing), made to run on the CPU by five
#                   edits of the copy (REFS_GR_RANKS processes over gloo,
#                   default 1 as on one GPU; device cpu; DDP without
#                   device ids; anomaly detection off): an edit that finds
#                   nothing to change stops the script naming it; epoch e's
#                   time from the end of epoch e - 1's evaluation to the
#                   start of epoch e's (its log's "eval @ epoch" lines and
#                   their seconds)
#   freescale       data import --format movielens, then mpirun -np 2 train
#                   with train.epochs = N, train.final_eval = off,
#                   train.log_every = 1; epoch e's time the sum of its steps'
#                   intervals (metrics)
# The peers run with OMP_NUM_THREADS (torch's threads) set to the number of
# cores they may use, or REFS_PEER_THREADS (torch's own default can be
# fewer: 1 on a 2-core VM), OPENBLAS_NUM_THREADS and MKL_NUM_THREADS unset
# (all those cores), and OpenBLAS's kernels (OPENBLAS_CORETYPE) that
# freescale chooses here, or REFS_PEER_CORETYPE. Never asserts on time.
set -u
TOP=$(cd "$(dirname "$0")/.." && pwd)
FS=${FREESCALE:-$TOP/freescale}
PY=${PYTHON:-python3}
SASREC=${SASREC_PYTORCH:-} GR=${GENERATIVE_RECOMMENDERS:-} ML1M=${ML1M_DIR:-}
EPOCHS=3 CORES='' ONLY=freescale,sasrec,hstu
usage() {
    sed -n '2,/^# .*REFS_PEER_CORETYPE. Never asserts on time/s/^# \{0,1\}//p' "$0"
    exit "${1:-2}"
}
die() { echo "refs: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
    case $1 in
    --epochs) [ $# -ge 2 ] || die "--epochs needs a number"; EPOCHS=$2; shift 2 ;;
    --cores) [ $# -ge 2 ] || die "--cores needs a list (e.g. 0,1)"; CORES=$2; shift 2 ;;
    --only) [ $# -ge 2 ] || die "--only needs freescale, sasrec, hstu or a comma list"; ONLY=$2; shift 2 ;;
    --sasrec) [ $# -ge 2 ] || die "--sasrec needs a directory"; SASREC=$2; shift 2 ;;
    --gr) [ $# -ge 2 ] || die "--gr needs a directory"; GR=$2; shift 2 ;;
    --ml1m) [ $# -ge 2 ] || die "--ml1m needs a directory"; ML1M=$2; shift 2 ;;
    -h | --help) usage 0 ;;
    *) echo "refs: unknown argument '$1'" >&2; usage ;;
    esac
done
case $EPOCHS in '' | *[!0-9]* | 0) die "--epochs '$EPOCHS': give a number of epochs >= 1" ;; esac
want() { case ",$ONLY," in *",$1,"*) return 0 ;; esac; return 1; }
for w in $(echo "$ONLY" | tr ',' ' '); do
    case $w in freescale | sasrec | hstu) ;; *) die "--only: '$w' is not freescale, sasrec or hstu" ;; esac
done
clone() { # OPTION VARIABLE NAME DIR FILE...: DIR is a git clone of NAME holding the FILEs
    opt=$1 var=$2 name=$3 dir=$4; shift 4
    [ -n "$dir" ] || die "no clone of $name given ($opt DIR or $var; see --help)"
    [ -d "$dir" ] || die "$name: '$dir' is not a directory"
    git -C "$dir" rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
        die "$name: '$dir' is not a git clone (git clone it; see --help)"
    for f in "$@"; do
        [ -e "$dir/$f" ] || die "$name: '$dir' has no $f: not a clone of it?"
    done
}
[ -n "$ML1M" ] || die "no ML-1M directory given (--ml1m DIR or ML1M_DIR; see --help)"
[ -d "$ML1M" ] || die "ML-1M: '$ML1M' is not a directory"
[ -s "$ML1M/ratings.dat" ] || die "ML-1M: '$ML1M' has no ratings.dat (MovieLens-1M unpacked)"
if want sasrec; then
    clone --sasrec SASREC_PYTORCH pmixer/SASRec.pytorch "$SASREC" README.md
    SMAIN=$SASREC/python/main.py
    [ -f "$SMAIN" ] || SMAIN=$SASREC/main.py
    [ -f "$SMAIN" ] || die "pmixer/SASRec.pytorch: '$SASREC' has neither python/main.py nor main.py: not a clone of it?"
fi
GIN=configs/ml-1m/hstu-sampled-softmax-n128-final.gin
if want hstu; then
    clone --gr GENERATIVE_RECOMMENDERS facebookresearch/generative-recommenders "$GR" main.py "$GIN"
    for f in users.dat movies.dat; do
        [ -s "$ML1M/$f" ] || die "ML-1M: '$ML1M' has no $f (the HSTU research code reads it)"
    done
fi
want freescale && { [ -x "$FS" ] || die "$FS not built (make)"; }
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_btl_vader_single_copy_mechanism=none
blas_fs=
# the peers' OpenBLAS kernels: REFS_PEER_CORETYPE, else freescale's choice,
# else the environment's
coretype() {
    [ -n "${REFS_PEER_CORETYPE:-}" ] && { echo "$REFS_PEER_CORETYPE"; return; }
    k=$(echo "$blas_fs" | sed -n 's/.*kernels \([A-Za-z0-9]*\).*/\1/p')
    echo "${k:-${OPENBLAS_CORETYPE:-}}"
}

pin() { if [ -n "$CORES" ]; then taskset -c "$CORES" "$@"; else "$@"; fi; }
# a peer's environment: torch's threads as many as the cores it may use
# (REFS_PEER_THREADS), its BLAS libraries' own (all of them), the OpenBLAS
# kernels below
peer() {
    ct=$(coretype)
    pin env -u OPENBLAS_NUM_THREADS -u MKL_NUM_THREADS OMP_NUM_THREADS="$PEER_THREADS" \
        ${ct:+OPENBLAS_CORETYPE=$ct} "$@"
}
if [ -n "$CORES" ]; then
    taskset -c "$CORES" true 2>/dev/null || die "--cores '$CORES': taskset refuses it"
fi
PEER_THREADS=${REFS_PEER_THREADS:-$(pin nproc)}
case $PEER_THREADS in '' | *[!0-9]* | 0) die "REFS_PEER_THREADS '$PEER_THREADS': give a number of threads >= 1" ;; esac
blas_py=
if want sasrec || want hstu; then
    # torch's BLAS: its build's BLAS_INFO and the BLAS libraries a matmul loads
    blas_py=$(peer "$PY" -c 'import re, os, torch, numpy
(torch.ones(64, 64) @ torch.ones(64, 64)).sum()
cfg = torch.__config__.show()
info = re.findall(r"(?:BLAS|LAPACK)_INFO=[^,\s]+", cfg)
libs = sorted({os.path.basename(l.split()[-1]) for l in open("/proc/self/maps")
               if re.search(r"blas|mkl", l.split()[-1], re.I)})
print("torch %s (%s; %s), %d threads" % (torch.__version__, ", ".join(info) or "BLAS not reported",
      ", ".join(libs) or "no BLAS library mapped", torch.get_num_threads()))' 2>/dev/null) ||
        die "$PY cannot import torch and numpy (see --help: Debian's python3-torch or a venv; PYTHON=path)"
fi
W=$(mktemp -d "${TMPDIR:-/tmp}/refs.XXXXXX") || exit 1
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up

# stamp: each line of stdin with the seconds since the epoch in front
stamp() { "$PY" -u -c 'import sys, time
for line in sys.stdin:
    sys.stdout.write("%.3f %s" % (time.time(), line))'; }
# median of the epochs' seconds on stdin (one a line), the first left out
# when there are two or more
epoch_median() {
    awk '{ v[NR] = $1 } END {
        s = NR > 1 ? 2 : 1; n = 0
        for (i = s; i <= NR; i++) w[++n] = v[i]
        for (i = 2; i <= n; i++) for (j = i; j > 1 && w[j] < w[j - 1]; j--) { x = w[j]; w[j] = w[j - 1]; w[j - 1] = x }
        if (n) printf "%.2f", (n % 2 ? w[(n + 1) / 2] : (w[n / 2] + w[n / 2 + 1]) / 2); else print "-" }'
}

blas_fs=
if want freescale; then
    "$FS" data import --format movielens "$ML1M/ratings.dat" -o "$W/ml-1m.h5" > "$W/import.log" 2>&1 ||
        { cat "$W/import.log"; die "freescale data import of $ML1M/ratings.dat failed"; }
fi
fs_run() { # MODEL: freescale's epochs at P = 2; prints the epoch median
    rm -f "$W/m.jsonl"
    pin "${MPIRUN:-mpirun}" -np 2 "$FS" train "$TOP/input/ml1m-$1.in" data.path="$W/ml-1m.h5" \
        train.epochs="$EPOCHS" train.final_eval=off train.log_every=1 \
        output.metrics="$W/m.jsonl" > "$W/fs-$1.log" 2>&1 ||
        { tail -n 20 "$W/fs-$1.log" >&2; echo "refs: freescale $1 failed" >&2; return 1; }
    blas_fs=$(sed -n 's/.*| BLAS: \([^|]*\) |.*/\1/p' "$W/fs-$1.log" | head -n 1)
    sed -n 's/.*"event":"train".*"epoch":\([0-9]*\),.*"interval_s":\([^,}]*\).*/\1 \2/p' "$W/m.jsonl" |
        awk '{ s[$1] += $2; if ($1 > n) n = $1 } END { for (e = 1; e <= n; e++) print s[e] }' > "$W/fs-$1.ep"
    [ "$(wc -l < "$W/fs-$1.ep")" -eq "$EPOCHS" ] ||
        { echo "refs: freescale $1: $(wc -l < "$W/fs-$1.ep") epochs in its metrics, want $EPOCHS" >&2; return 1; }
    epoch_median < "$W/fs-$1.ep"
}

sasrec_run() { # prints the epoch median of pmixer/SASRec.pytorch
    mkdir -p "$W/sasrec/run/data" "$W/sasrec/data" || return 1
    # users' events by time (ties: file order), items numbered from 1 by first appearance
    "$PY" - "$ML1M/ratings.dat" "$W/sasrec/run/data/ml-1m.txt" <<'PYEOF' || return 1
import sys
rows = []
with open(sys.argv[1], encoding="latin-1") as f:
    for n, line in enumerate(f):
        u, i, _, t = line.strip().split("::")
        rows.append((int(u), int(t), n, int(i)))
rows.sort()
num = {}
with open(sys.argv[2], "w") as out:
    for u, _, _, i in rows:
        out.write("%d %d\n" % (u, num.setdefault(i, len(num) + 1)))
PYEOF
    ln -s ../run/data/ml-1m.txt "$W/sasrec/data/ml-1m.txt"
    (cd "$W/sasrec/run" && peer PYTHONPATH="$(dirname "$SMAIN")" "$PY" -u "$SMAIN" --dataset=ml-1m --train_dir=refs --maxlen=200 --dropout_rate=0.2 \
        --device=cpu --num_epochs="$EPOCHS" 2>&1 | stamp > "$W/sasrec.log")
    grep -q ' Done$' "$W/sasrec.log" ||
        { tail -n 20 "$W/sasrec.log" >&2; echo "refs: SASRec.pytorch failed" >&2; return 1; }
    # epoch e: from epoch e - 1's last loss line to its own (epoch 1: from
    # its first), so that each epoch has all its steps and the save after
    # the last one is left out
    awk '/ loss in epoch [0-9]+ iteration [0-9]+:/ {
             for (i = 1; i <= NF; i++) if ($i == "epoch") e = $(i + 1)
             if (!(e in f)) f[e] = $1
             l[e] = $1; if (e > n) n = e }
         END { for (e = 1; e <= n; e++) print l[e] - (e > 1 ? l[e - 1] : f[e]) }' "$W/sasrec.log" > "$W/sasrec.ep"
    epoch_median < "$W/sasrec.ep"
}

gr_edit() { # FILE FROM TO: replace a line's text in the copy, or stop naming it
    grep -qF -- "$2" "$1" || { echo "refs: generative-recommenders: no '$2' in $1 to make it run on the CPU (a newer revision? see --help)" >&2; return 1; }
    FROM=$2 TO=$3 "$PY" -c 'import os, sys
p = sys.argv[1]; s = open(p).read()
open(p, "w").write(s.replace(os.environ["FROM"], os.environ["TO"]))' "$1"
}

gr_run() { # prints the epoch median of the HSTU research code
    # the modules it imports (main.py: fbgemm_gpu, gin, absl; its trainer
    # torch.utils.tensorboard; its data pandas), before anything is copied
    lacks=$(peer "$PY" -c 'import importlib.util as u
print(" ".join(m for m in ("fbgemm_gpu", "gin", "absl", "pandas", "tensorboard") if u.find_spec(m) is None))') ||
        { echo "refs: $PY cannot look up the HSTU research code's modules" >&2; return 1; }
    [ -z "$lacks" ] ||
        { echo "refs: the HSTU research code needs Python modules that $PY lacks: $lacks (see --help)" >&2; return 1; }
    mkdir -p "$W/gr" && (cd "$GR" && git ls-files -z | xargs -0 tar cf -) | tar xf - -C "$W/gr" ||
        { echo "refs: cannot copy $GR" >&2; return 1; }
    tf=$(grep -rl --include=train.py 'def train_fn(' "$W/gr" | head -n 1)
    [ -n "$tf" ] || { echo "refs: generative-recommenders: no train.py with train_fn" >&2; return 1; }
    gr_edit "$W/gr/main.py" 'world_size = torch.cuda.device_count()' \
        'world_size = int(os.environ.get("REFS_GR_RANKS", "1"))' &&
        gr_edit "$tf" 'dist.init_process_group("nccl"' 'dist.init_process_group("gloo"' &&
        gr_edit "$tf" '    device = rank' '    device = torch.device("cpu")' &&
        gr_edit "$tf" 'DDP(model, device_ids=[rank],' 'DDP(model,' &&
        gr_edit "$tf" 'torch.autograd.set_detect_anomaly(True)' 'torch.autograd.set_detect_anomaly(False)' ||
        return 1
    # the data where its preprocessing looks, zipped as GroupLens ships it
    mkdir -p "$W/gr/tmp" && "$PY" - "$ML1M" "$W/gr/tmp/movielens1m.zip" <<'PYEOF' || return 1
import sys, zipfile
with zipfile.ZipFile(sys.argv[2], "w") as z:
    for f in ("ratings.dat", "users.dat", "movies.dat"):
        z.write("%s/%s" % (sys.argv[1], f), "ml-1m/" + f)
PYEOF
    pre=$(cd "$W/gr" && ls -d generative_recommenders/research/data/preprocessor.py \
        generative_recommenders/data/preprocessor.py data/preprocessor.py 2>/dev/null | head -n 1)
    [ -n "$pre" ] || { echo "refs: generative-recommenders: no data/preprocessor.py" >&2; return 1; }
    mod=$(echo "${pre%.py}" | tr / .)
    (cd "$W/gr" && peer PYTHONPATH=. "$PY" -c "from $mod import get_common_preprocessors as g
g()['ml-1m'].preprocess_rating()" > "$W/gr-pre.log" 2>&1) ||
        { tail -n 20 "$W/gr-pre.log" >&2; echo "refs: the HSTU research code's ML-1M preprocessing failed" >&2; return 1; }
    printf '\ntrain_fn.num_epochs = %s\ntrain_fn.eval_interval = 1000000000\n' "$EPOCHS" >> "$W/gr/$GIN"
    (cd "$W/gr" && peer PYTHONPATH=. "$PY" -u main.py \
        --gin_config_file="$GIN" --master_port=$((20000 + $$ % 20000)) 2>&1 | stamp > "$W/gr.log")
    n=$(grep -c 'rank 0: eval @ epoch' "$W/gr.log")
    [ "$n" -eq "$EPOCHS" ] ||
        { tail -n 20 "$W/gr.log" >&2; echo "refs: the HSTU research code failed ($n of $EPOCHS epochs)" >&2; return 1; }
    # epoch e: from the end of the evaluation before it (the writer's line
    # before epoch 0) to the start of its own evaluation
    awk '/Rank 0: writing logs to/ && !s { s = $1 }
         /rank 0: eval @ epoch [0-9]+ in [0-9.]+s/ {
             for (i = 1; i <= NF; i++) if ($i == "in") { x = $(i + 1); sub(/s:?$/, "", x) }
             print $1 - x - s; s = $1 }' "$W/gr.log" > "$W/gr.ep"
    epoch_median < "$W/gr.ep"
}

rev() { git -C "$1" rev-parse --short HEAD 2>/dev/null || echo "?"; }
echo "refs: $(date -u '+%F %H:%M UTC'); $(lscpu | sed -n 's/^Model name: *//p' | head -n 1)," \
    "$(nproc) CPUs${CORES:+, cores $CORES}; load average $(cut -d' ' -f1-3 /proc/loadavg);" \
    "ML-1M $ML1M/ratings.dat ($(wc -l < "$ML1M/ratings.dat") ratings); $EPOCHS epochs a run"
rc=0
fs_sas=- fs_hstu=- p_sas=- p_hstu=-
if want freescale; then
    fs_sas=$(fs_run sasrec) || { rc=1; fs_sas=-; }
    fs_hstu=$(fs_run hstu) || { rc=1; fs_hstu=-; }
    blas_fs=$(sed -n 's/.*| BLAS: \([^|]*\) |.*/\1/p' "$W"/fs-*.log 2>/dev/null | head -n 1)
fi
want sasrec && { p_sas=$(sasrec_run) || { rc=1; p_sas=-; }; }
want hstu && { p_hstu=$(gr_run) || { rc=1; p_hstu=-; }; }
echo "BLAS: freescale ${blas_fs:-(not run)}; peers ${blas_py:-(not run)}, OPENBLAS_CORETYPE=$(coretype)"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.1fx", a / b; else print "-" }'; }
printf '%-7s %-44s %10s %8s\n' model code "s/epoch" ratio
printf '%-7s %-44s %10s %8s\n' sasrec "pmixer/SASRec.pytorch $(want sasrec && rev "$SASREC")" "$p_sas" ""
printf '%-7s %-44s %10s %8s\n' sasrec "freescale $(rev "$TOP") P = 2" "$fs_sas" "$(ratio "$p_sas" "$fs_sas")"
printf '%-7s %-44s %10s %8s\n' hstu "generative-recommenders $(want hstu && rev "$GR")" "$p_hstu" ""
printf '%-7s %-44s %10s %8s\n' hstu "freescale $(rev "$TOP") P = 2" "$fs_hstu" "$(ratio "$p_hstu" "$fs_hstu")"
exit $rc
