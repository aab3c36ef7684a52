#!/bin/sh
# cli_gen_planted: data gen --labels planted:K (tools/data_gen_planted.h):
#   - the file is a function of the options (two runs: the same bytes of
#     every dataset and attribute);
#   - /events/click is 0/1 and /events/rating float; the recorded optimum
#     is consistent with them: planted_mse is the noise variance 0.25
#     (within 0.03 on 3200 test events), 0.5 < planted_auc < 1, NE < 1;
#   - a ranking run on it reports its gap to the optimum (printed, not
#     asserted: the trainer ends at the user+item baseline, and at this
#     size even an oracle that knows the item factors stays 0.010 AUC
#     short of the recorded optimum; doc/quality.md).
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: $PY cannot import h5py and numpy"; exit 77; }
G="--users 800 --items 50 --length fixed:50 --timestamps --zipf 0.5 --labels planted:4"
expect_ok "$FS" data gen $G -o "$T/a.h5"
expect_ok "$FS" data gen $G -o "$T/b.h5"
expect_error "--labels: 'planted:0' is not planted or planted:K" "$FS" data gen $G --labels planted:0 -o "$T/c.h5"
"$PY" - "$T/a.h5" "$T/b.h5" <<'PYEOF' > "$T/p.out" 2>&1 && pass "$(tail -1 "$T/p.out")" || fail "planted: $(cat "$T/p.out")"
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
for k in ("offsets", "item_ids", "timestamps", "events/click", "events/rating"):
    assert np.array_equal(a[k][:], b[k][:]), k
assert dict(a.attrs) == dict(b.attrs)
c, r = a["events/click"][:], a["events/rating"][:]
assert c.dtype == np.float32 and set(np.unique(c)) == {0.0, 1.0} and r.dtype == np.float32
at = a.attrs
assert at["planted_test_events"] == 4 and at["planted_tasks"] in (b"click:binary:click,rating:regression:rating", "click:binary:click,rating:regression:rating")
assert 0.5 < at["planted_auc"] < 1 and 0 < at["planted_ne"] < 1, dict(at)
assert abs(at["planted_mse"] - 0.25) < 0.03, at["planted_mse"]
print(f"planted: deterministic, optimum AUC {at['planted_auc']:.4f} NE {at['planted_ne']:.4f} MSE {at['planted_mse']:.4f}")
PYEOF
# the trainer's gap (reported)
"$FS" train "$TOP_SRCDIR/input/tiny.in" "data.path=$T/a.h5" train.task=ranking \
    train.tasks=click:binary:click,rating:regression:rating:0.5 train.negatives=128 \
    data.split=last:4 data.max_seq_len=50 model.bias=on model.head=32 train.batch_size=64 \
    train.epochs=5 train.lr=3e-3 embedding.optimizer=adam embedding.lr=3e-3 \
    "output.metrics=$T/m.jsonl" > "$T/t.out" 2>&1 || fail "train on the planted data: $(tail -3 "$T/t.out")"
"$PY" - "$T/a.h5" "$T/m.jsonl" <<'PYEOF' || fail "gap"
import sys, h5py, json
at = h5py.File(sys.argv[1], "r").attrs
t = [json.loads(l) for l in open(sys.argv[2]) if '"split":"test"' in l][-1]
print(f"note: trainer vs the planted optimum: click AUC {t['click.auc']:.4f} ({t['click.auc'] - at['planted_auc']:+.4f}), "
      f"NE {t['click.ne']:.4f} ({t['click.ne'] - at['planted_ne']:+.4f}), rating MSE {t['rating.mse']:.4f} (optimum {at['planted_mse']:.4f})")
PYEOF
finish
