#!/usr/bin/env bash
# compare_eval: what this tree's build evaluates and writes against git
# revision REV's, bitwise, on one small dataset (the counterpart of
# compare.sh, which compares the training losses and the speed).
#
#   bench/compare_eval.sh REV
#
# REV is built as compare.sh builds it (git archive, cached per commit
# under ${COMPARE_CACHE:-${TMPDIR:-/tmp}/freescale-compare}). One dataset
# (300 users, 400 items, item, user and event features, written by this
# tree's data gen) serves both builds. Each configuration below trains
# two epochs of input/tiny.in on 2 ranks with validation and test, in
# both builds; then recommend (CSV and HDF5), export and score run on the
# checkpoints. It prints one line per configuration and per output:
#   - the metrics file's training and evaluation lines without their
#     timings (losses, every evaluation figure, the baselines, keep_best's
#     test-last), and the log's eval, keep_best, patience and task lines;
#   - recommend's CSV byte for byte; every dataset and attribute of the
#     HDF5 outputs (the checkpoint's and dataset's paths aside).
# Exit status 1 when anything differs or a run of this tree fails.
set -uo pipefail
REV=${1:?usage: bench/compare_eval.sh REV}
TOP=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${COMPARE_CACHE:-${TMPDIR:-/tmp}/freescale-compare}
PY=/usr/bin/python3
die() { echo "compare_eval: $*" >&2; exit 1; }

[ -x "$PY" ] || die "needs $PY (Debian's python3, with h5py)"
HASH=$(git -C "$TOP" rev-parse --verify -q "$REV^{commit}") || die "$REV: not a git revision"
make -C "$TOP" -s freescale >/dev/null || die "this tree does not build (make in $TOP)"
A=$TOP/freescale
B_DIR=$CACHE/$HASH
if [ ! -x "$B_DIR/freescale" ]; then
    echo "compare_eval: building $REV (${HASH:0:10}) in $B_DIR"
    rm -rf "$B_DIR" && mkdir -p "$B_DIR" || die "cannot create $B_DIR"
    git -C "$TOP" archive "$HASH" | tar -x -C "$B_DIR" || die "git archive $HASH failed"
    (cd "$B_DIR" && autoreconf -fi && ./configure && make -j"$(nproc)" freescale) \
        >"$B_DIR.log" 2>&1 || { tail -n 30 "$B_DIR.log"; rm -rf "$B_DIR"; die "build of $REV failed (log: $B_DIR.log)"; }
fi
B=$B_DIR/freescale

W=$(mktemp -d "${TMPDIR:-/tmp}/compare_eval.XXXXXX") || die "mktemp failed"
trap 'rm -rf "$W"' EXIT
trap 'exit 130' INT; trap 'exit 143' TERM # and the EXIT trap cleans up
cd "$W" || die "cd $W"
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
IN=$TOP/input/tiny.in
"$A" data gen --users 300 --items 400 --length uniform:5,40 --timestamps --seed 3 \
    --item-feature genres:19:3 --item-feature year:80 --user-feature age:8 \
    --user-feature occ:21 --event-feature act:6 -o d.h5 >/dev/null 2>&1 || die "data gen failed"
printf 'user,item\n' >pairs.csv
for u in 1 2 3 5 8 13 21; do for i in 1 7 30 99; do echo "$u,$i" >>pairs.csv; done; done
echo "compare_eval: A = this tree ($(git -C "$TOP" rev-parse --short HEAD)), B = $REV (${HASH:0:10}), 2 ranks, $(date -u +%F)"
status=0

# The metrics lines without their timings, A's against B's.
metrics_same() { # NAME
    "$PY" - "$1" <<'PY'
import json, sys
n = sys.argv[1]
timing = ('time', '_s', 'per_s', 'ms', 'mfu', 'rss', 'bytes', 'wall', 'gflop', 'util',
          'elapsed', 'bubble', 'imbalance', 'overlap', 'seconds', 'busy')
def lines(f):
    out = []
    for l in open(f):
        d = json.loads(l)
        if 'split' in d or 'loss' in d:
            out.append({k: v for k, v in d.items() if not any(s in k for s in timing)})
    return out
a, b = lines(f'A-{n}.jsonl'), lines(f'B-{n}.jsonl')
splits = sorted(set(x['split'] for x in a if 'split' in x))
print(f"{n}: {len(a)} metrics lines (evaluations: {', '.join(splits)}): "
      f"{'identical' if a == b else 'DIFFER'}")
for x, y in zip(a, b):
    if x != y:
        print('  A', x)
        print('  B', y)
        break
sys.exit(0 if a == b else 1)
PY
}

# The log's evaluation, keep_best, patience and task lines (any rank
# order; the ranks' warnings interleave).
log_lines() { # FILE WHO
    grep -h 'keep_best\|patience\|task \|ranking: \|^eval ' "$1" |
        grep -v 'warning\|retrieval parameter\|^checkpoint' | sed "s/$2-/X-/g" | sort
}

cfg() { # NAME OVERRIDES...
    local n=$1 X FS
    shift
    for X in A B; do
        FS=${!X}
        if ! mpirun -np 2 "$FS" train "$IN" data.path=d.h5 "output.checkpoint_dir=$X-$n" \
            "output.metrics=$X-$n.jsonl" train.epochs=2 "$@" >"$X-$n.log" 2>&1; then
            echo "$n: $X's run failed: $(grep -m1 -i error "$X-$n.log" | cut -c1-160)"
            status=1
            return
        fi
    done
    metrics_same "$n" || status=1
    if [ "$(log_lines "A-$n.log" A)" = "$(log_lines "B-$n.log" B)" ]; then
        echo "$n: $(log_lines "A-$n.log" A | grep -c .) log lines: identical"
    else
        echo "$n: log lines DIFFER"
        diff <(log_lines "A-$n.log" A) <(log_lines "B-$n.log" B) | head -6
        status=1
    fi
}

# Every dataset and attribute of two HDF5 files.
h5_same() { # A.h5 B.h5
    "$PY" - "$1" "$2" <<'PY'
import h5py, sys, numpy as np
a, b = h5py.File(sys.argv[1], 'r'), h5py.File(sys.argv[2], 'r')
names = []
a.visit(lambda k: names.append(k) if isinstance(a[k], h5py.Dataset) else None)
bad = [k for k in names if k not in b or not np.array_equal(a[k][()], b[k][()])]
def attrs(f, who):
    out = {}
    def add(name, o):
        for k, x in o.attrs.items():
            out[name + '@' + k] = str(x).replace(who + '-', 'X-')
    add('/', f)
    f.visititems(add)
    return out
aa, ba = attrs(a, 'A'), attrs(b, 'B')
bad += sorted(k for k in set(aa) | set(ba) if aa.get(k) != ba.get(k))
print(f"{sys.argv[1][2:]}: {len(names)} datasets, {len(aa)} attributes: "
      f"{'identical' if not bad else 'DIFFER: ' + ', '.join(bad[:5])}")
sys.exit(1 if bad else 0)
PY
}

cmd() { # OUT CONFIGURATION COMMAND ARGS...
    local out=$1 c=$2 X FS ck
    shift 2
    for X in A B; do
        FS=${!X}
        ck=$(ls "$X-$c"/ckpt-*.h5 2>/dev/null | tail -n 1)
        if [ -z "$ck" ] || ! mpirun -np 2 "$FS" "$@" "$ck" data.path=d.h5 -o "$X-$out" \
            >"$X-$out.log" 2>&1; then
            echo "$out: $X's $1 failed: $(grep -m1 -i error "$X-$out.log" 2>/dev/null | cut -c1-160)"
            status=1
            return
        fi
    done
    case $out in
    *.csv) if cmp -s "A-$out" "B-$out"; then
               echo "$out: $(wc -l <"A-$out") lines: identical"
           else
               echo "$out: DIFFER"
               status=1
           fi ;;
    *.h5) h5_same "A-$out" "B-$out" || status=1 ;;
    esac
}

RANK=(train.task=ranking 'train.tasks=like:binary:act>=3' data.split=last:10%)
cfg plain
cfg features features.item=genres,year features.user=age,occ features.event=act
cfg sasrec model.type=sasrec
cfg baseline train.baseline=on
cfg bce train.loss=bce
cfg full train.loss=full
cfg split_long parallel.split_long=auto parallel.split_fraction=0.02
cfg mixed-prefetch train.negatives_from=mixed parallel.overlap=prefetch
cfg overlap-none parallel.overlap=none
cfg fake-devtab device.type=fake device.share=on embedding.placement=device
cfg fake-sasrec model.type=sasrec device.type=fake device.share=on
cfg bf16 device.precision=bf16
cfg codecs-group parallel.rows_codec=bf16 parallel.grads_codec=bf16 parallel.embedding_group=1
cfg keep_best train.keep_best=on train.eval_every=1 train.epochs=8 train.patience=2
cfg ranking-keep_best "${RANK[@]}" train.keep_best=on train.eval_every=1 train.epochs=6 \
    train.select=like.ne train.patience=2
cfg ranking "${RANK[@]}" features.item=genres,year train.baseline=on
cmd recommend.csv plain recommend --top 10
cmd recommend-features.csv features recommend --top 10
cmd recommend-features.h5 features recommend --top 10
cmd export.h5 plain export
cmd export-features.h5 features export
cmd export-ranking.h5 ranking export
cmd score.csv ranking score --pairs pairs.csv
cmd score.h5 ranking score --pairs pairs.csv
[ $status = 0 ] && echo "compare_eval: identical" || echo "compare_eval: DIFFERENCES (above)"
exit $status
