#!/bin/sh
# cli_data_v2: the features of dataset format version 2 written by h5py:
# single- and multi-valued categorical features and float features of
# events, users and items are read by 'data check' and 'data stats'
# (version 1 files keep working); every malformed feature is refused naming
# the file, the dataset and the first bad index; num_items or a cardinality
# beyond any table is refused by 'data check' and by training, naming the
# file, the attribute and the figures.
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: no h5py for $PY"; exit 77; }
need_mpirun

# mk OUT.h5 [EDIT ...]: 64 users, 200 items, version 2 with features; each
# EDIT is a Python statement run on the dicts attrs, data (path -> array)
# and card (path -> cardinality attribute) before writing.
mk() { "$PY" - "$@" <<'EOF'
import sys, h5py, numpy as np
out, edits = sys.argv[1], sys.argv[2:]
rng = np.random.default_rng(7)
lens = rng.integers(5, 41, size=64)
off = np.concatenate([[0], np.cumsum(lens)])
E = int(off[-1])
items = rng.integers(1, 201, size=E)
ts = np.concatenate([np.sort(rng.integers(0, 10**6, size=l)) for l in lens])
attrs = {"format": "freescale-seq", "version": 2, "num_items": 200, "num_users": 64}
gl = rng.integers(0, 4, size=200)
data = {"offsets": off, "item_ids": items, "timestamps": ts,
        "events/click": rng.integers(0, 3, size=E).astype(np.int8),
        "events/watch": rng.random(E).astype(np.float32),
        "users/age": rng.integers(0, 8, size=64).astype(np.int32),
        "items/year": rng.integers(1, 50, size=200),
        "items/genres/offsets": np.concatenate([[0], np.cumsum(gl)]),
        "items/genres/values": rng.integers(1, 19, size=int(gl.sum())).astype(np.int32)}
card = {"events/click": 3, "users/age": 8, "items/year": 50, "items/genres": 19}
for e in edits:
    exec(e)
with h5py.File(out, "w") as f:
    for k, v in attrs.items():
        f.attrs[k] = v
    for k, v in data.items():
        f[k] = v
    for k, v in card.items():
        f[k].attrs["cardinality"] = v
EOF
}
refused() { # refused MESSAGE [EDIT ...]
    msg=$1; shift
    mk "$T/bad.h5" "$@" || { fail "mk $*"; return; }
    expect_error "$T/bad.h5: $msg" "$FS" data check "$T/bad.h5"
}

# --- good files -------------------------------------------------------------
mk "$T/v2.h5" || { fail "mk"; finish; }
expect_ok "$FS" data check "$T/v2.h5"
grep -q "ok (64 users, 200 items, [0-9]* events, 5 features)" "$T/out" || fail "check: $(cat "$T/out")"
grep -q "items/genres: categorical multi-valued, cardinality 19" "$T/out" || fail "check genres"
expect_ok "$FS" data stats "$T/v2.h5"
for want in "^features: 5$" "^feature events/watch: float$" \
    "^feature items/genres values: [0-9]* (1\.[0-9]* per item, at most 3)$" \
    "^feature users/age: categorical, cardinality 8$" "^feature events/click distinct values used: 2 of 2$"; do
    grep -q "$want" "$T/out" || fail "stats lacks '$want': $(grep feature "$T/out" | head -20)"
done
# version 1 without features still reads; a version 1 file with features does not
mk "$T/v1.h5" 'attrs["version"] = 1' 'data = {k: v for k, v in data.items() if "/" not in k}' 'card = {}'
expect_ok "$FS" data check "$T/v1.h5"
grep -q "0 features" "$T/out" || fail "v1: $(cat "$T/out")"

# --- refused ---------------------------------------------------------------
refused "attribute version = 1, but the file has features (/events, /users or /items): features need version = 2" 'attrs["version"] = 1'
refused "/users/age[3] = 8 is outside 0 .. 7 (cardinality 8; 0 = missing)" 'data["users/age"][3] = 8'
refused "/events/click[5] = -1 is outside 0 .. 2" 'data["events/click"][5] = -1'
refused "/items/year has integer values but no 'cardinality' attribute" 'del card["items/year"]'
refused "/events/watch has float values and a 'cardinality' attribute" 'card["events/watch"] = 4'
refused "/events/watch[7] = nan is not a finite float32" 'data["events/watch"][7] = np.nan'
refused "/items/genres/offsets decreases at index 5" \
    'o = data["items/genres/offsets"]; o[5] = o[4] - 1 if o[4] > 0 else 0; o[4] = o[4] if o[4] > 0 else 1'
refused "/items/genres/offsets has 200 elements, expected 201" \
    'data["items/genres/offsets"] = data["items/genres/offsets"][:200]'
refused "/items/genres/offsets[200] = " \
    'data["items/genres/values"] = np.concatenate([data["items/genres/values"], [1]]).astype(np.int32)'
refused "/users/age has 63 elements, expected 64" 'data["users/age"] = data["users/age"][:63]'
refused "/events/click is a group: event features are single-valued" \
    'data["events/click/offsets"] = off; data["events/click/values"] = data.pop("events/click")'
refused "/items/year has string values, expected integers (categorical) or floats" \
    'data["items/year"] = np.array([b"x"] * 200); del card["items/year"]; card["items/year2"] = 3; data["items/year2"] = np.ones(200, np.int8)'
refused "feature /users/bad name: names are 1 to 47 characters" \
    'data["users/bad name"] = np.zeros(64, np.int8); card["users/bad name"] = 2'
refused "/users/age: attribute cardinality = 0 is outside 1 .. 2^40" 'card["users/age"] = 0'
refused "/users/age: attribute cardinality = 9223372036854775807 is outside 1 .. 2^40" 'card["users/age"] = 2**63 - 1'
refused "/users/age: attribute cardinality = 1073741824 is far beyond the largest value used, 7" \
    'card["users/age"] = 2**30'
refused "attribute num_items = 9223372036854775807 is beyond any item table (at most 2^40" \
    'attrs["num_items"] = 2**63 - 1'
refused "attribute num_items = 1073741824 is far beyond the largest item id used, 200" \
    'attrs["num_items"] = 2**30' 'data = {k: v for k, v in data.items() if "items/" not in k}' \
    'card = {k: v for k, v in card.items() if "items/" not in k}'
expect_error "attribute num_items = 1073741824 is far beyond the largest item id used" \
    "$FS" data stats "$T/bad.h5"

# --- data gen writes synthetic features; the file does not depend on the chunk size
G="--users 50 --items 80 --length uniform:3,20 --item-feature genres:12:3 --user-feature age:6 --event-feature act:4"
expect_ok "$FS" data gen $G -o "$T/g1.h5"
expect_ok "$FS" data gen $G --chunk-events 7 -o "$T/g2.h5"
expect_ok "$FS" data stats "$T/g1.h5"
for want in "^features: 3$" "^feature items/genres: categorical multi-valued, cardinality 12$" \
    "^feature events/act distinct values used: 3 of 3$" "^feature users/age values: 50$"; do
    grep -q "$want" "$T/out" || fail "gen stats lack '$want': $(grep '^feature' "$T/out")"
done
"$PY" -c "
import h5py, numpy as np
a, b = h5py.File('$T/g1.h5', 'r'), h5py.File('$T/g2.h5', 'r')
for k in ('item_ids', 'events/act', 'users/age', 'items/genres/offsets', 'items/genres/values'):
    assert np.array_equal(a[k][:], b[k][:]), k
" || fail "data gen features depend on --chunk-events"
expect_error "--item-feature: 'genres:1' is not NAME:CARD[:K]" "$FS" data gen $G --item-feature genres:1 -o "$T/g3.h5"
expect_error "--event-feature: 'a:5:2': event features are single-valued" "$FS" data gen $G --event-feature a:5:2 -o "$T/g3.h5"
no_file "$T/g3.h5"

# training refuses the absurd file (num_items = 2^63 - 1 with 200 items used)
mk "$T/huge.h5" 'attrs["num_items"] = 2**63 - 1'
expect_error "huge.h5: attribute num_items = 9223372036854775807 is beyond any item table" \
    "$MPIRUN" -np 2 "$FS" train "$TOP_SRCDIR/input/tiny.in" "data.path=$T/huge.h5" train.max_steps=1
# ... and a table that no node could hold (2^39 rows of dim 16 and their state)
mk "$T/big.h5" 'attrs["num_items"] = 2**39' 'data = {k: v for k, v in data.items() if "items/" not in k}' \
    'card = {k: v for k, v in card.items() if "items/" not in k}'
expect_error "big.h5: attribute num_items = 549755813888: table 'items' needs" \
    "$MPIRUN" -np 2 "$FS" train "$TOP_SRCDIR/input/tiny.in" "data.path=$T/big.h5" train.max_steps=1
grep -q "more than this node's" "$T/err" || fail "memory figures: $(head -c 400 "$T/err")"
finish
