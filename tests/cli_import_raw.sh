#!/bin/sh
# cli_import_raw: 'data import --ids raw' (doc/data.md, src/data/dataset_raw.c).
#   - the same interactions imported dense and, after multiplying every
#     item id by a large odd constant K, raw: the raw file holds the same
#     users, events, times, ratings and item features, its item ids are K x
#     the dense file's original ids (one to one, the same row order), the
#     sorted list in /items/ids, each user's raw id in /user_map;
#   - string ids are their FNV-1a 64 hash with the top bit cleared (an
#     oracle in Python), collisions counted;
#   - an item id 0 or negative is refused with FILE:LINE (--skip-bad skips
#     it); data check and stats read raw files; training and 'params'
#     refuse them without embedding.dynamic = on (cli_dynamic_raw.sh trains);
#   - data gen --raw-ids K writes a dense dataset's events with ids x K;
#   - damaged raw files (unsorted or non-positive /items/ids, an event id
#     not in the list or 0, no list, the attributes disagreeing, /user_map out
#     of order) are refused naming the file and the dataset.
. "$(dirname "$0")/lib.sh"

K=1099511627791 # odd, about 2^40: K x the ids below stays under 2^63

# 60 users, items 3j + 1 (not contiguous), times (with ties: file order
# kept) and ratings
awk 'BEGIN { print "userId,movieId,rating,timestamp"; s = 7
    for (n = 0; n < 700; n++) { s = (s * 75 + 74) % 65537
        u = 10 + (s % 60) * 7; r = 1 + int(s / 60) % 5
        printf "%d,%d,%d.5,%d\n", u, 3 * (n % 150) + 1, r, 1000 + int(s / 300) % 50 } }' \
    > "$T/d.csv"
awk 'BEGIN { print "movieId,brand,price"
    for (j = 0; j < 150; j++) printf "%d,b%d,%d.25\n", 3 * j + 1, j % 7, j % 11 }' > "$T/d-items.csv"
# the same with every item id x K (shell arithmetic: 64-bit)
mult() { # FILE COLUMN(1-based) -> FILE with that column x K (header kept)
    { IFS= read -r head; echo "$head"
      while IFS=, read -r a b c d; do
          if [ "$2" = 1 ]; then a=$((a * K)); else b=$((b * K)); fi
          echo "$a,$b,$c${d:+,$d}"
      done; } < "$1"
}
mult "$T/d.csv" 2 > "$T/r.csv"
mult "$T/d-items.csv" 1 > "$T/r-items.csv"

SIDE="--item-key movieId --item-cols brand,price:float"
expect_ok "$FS" data import --format csv "$T/d.csv" --item-features "$T/d-items.csv" $SIDE \
    --event-cols rating:float -o "$T/d.h5"
expect_ok "$FS" data import --format csv "$T/r.csv" --item-features "$T/r-items.csv" $SIDE \
    --event-cols rating:float --ids raw -o "$T/r.h5"
cat "$T/out" "$T/err" > "$T/log"
grep -q "raw ids (version 3): item ids $K \.\. $((448 * K)) in /items/ids" "$T/log" &&
    grep -q "hash collisions (distinct string ids, one raw id): 0 of items (integer ids: none)" \
        "$T/log" && pass "the import reports the raw id range and the collisions" ||
    fail "import log: $(cat "$T/err")"

if have_h5py; then
    if "$PY" - "$T/d.h5" "$T/r.h5" "$K" <<'EOF'; then pass "dense and raw files hold the same events, ids mapped one to one"; else fail "dense vs raw"; fi
import sys, h5py, numpy as np
d, r, K = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), int(sys.argv[3])
assert dict(r.attrs)["version"] == 3 and r.attrs["ids"] == "raw", dict(r.attrs)
assert dict(d.attrs)["version"] == 2 and "ids" not in d.attrs, dict(d.attrs)
assert r.attrs["num_items"] == d.attrs["num_items"] == 150 and r.attrs["num_users"] == 60, \
    (dict(r.attrs), dict(d.attrs))
for k in ["offsets", "timestamps", "actions", "user_map", "events/rating", "items/brand",
          "items/price"]:
    assert np.array_equal(d[k][:], r[k][:]), k
dm = d["item_map"][:]
assert np.array_equal(r["items/ids"][:], dm * K), "items/ids"
assert np.array_equal(r["item_ids"][:], dm[d["item_ids"][:] - 1] * K), "item_ids"
assert "item_map" not in r and np.all(np.diff(r["items/ids"][:]) > 0)
EOF
else
    pass "h5py not installed: file contents not compared"
fi

# data gen --raw-ids K: the same events with every item id x K
G="--users 40 --items 300 --length uniform:3,30 --timestamps --item-feature brand:9 --seed 3"
expect_ok "$FS" data gen $G -o "$T/gd.h5"
expect_ok "$FS" data gen $G --raw-ids $K -o "$T/gr.h5"
expect_ok "$FS" data check "$T/gr.h5"
if have_h5py; then
    if "$PY" - "$T/gd.h5" "$T/gr.h5" "$K" <<'EOF'; then pass "data gen --raw-ids: the dense events, ids x K"; else fail "data gen --raw-ids"; fi
import sys, h5py, numpy as np
d, r, K = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r"), int(sys.argv[3])
assert r.attrs["version"] == 3 and r.attrs["ids"] == "raw" and r.attrs["num_items"] == 300
for k in ["offsets", "timestamps", "items/brand"]:
    assert np.array_equal(d[k][:], r[k][:]), k
assert np.array_equal(r["item_ids"][:], d["item_ids"][:] * K)
assert np.array_equal(r["items/ids"][:], np.arange(1, 301) * K)
assert np.array_equal(r["user_map"][:], np.arange(40))
EOF
fi
expect_error "the largest id N x K must stay below 2^63" "$FS" data gen $G --raw-ids 4e16 \
    -o "$T/gx.h5"

# data check, data stats
expect_ok "$FS" data check "$T/r.h5"
grep -q "ok (60 users, 150 items, 700 events, 3 features)" "$T/out" && pass "data check" ||
    fail "data check: $(cat "$T/out")"
expect_ok "$FS" data stats "$T/r.h5"
grep -q "^ids: raw (version 3: item ids $K \.\. $((448 * K))" "$T/out" &&
    grep -q "^items used: 150 (100.0% of num_items)" "$T/out" &&
    grep -Eq "^top item: [0-9]+ \(" "$T/out" && pass "data stats reports a raw dataset" ||
    fail "data stats: $(cat "$T/out")"
top=$(sed -n 's/^top item: \([0-9]*\) .*/\1/p' "$T/out")
"$FS" data stats "$T/d.h5" > "$T/dstats" 2>&1
grep -q "^ids: dense (items 1 .. 150)" "$T/dstats" && pass "data stats: dense" ||
    fail "data stats dense: $(head -5 "$T/dstats")"
dtop=$(sed -n 's/^top item original id: \([0-9]*\) .*/\1/p' "$T/dstats")
[ -n "$top" ] && [ "$top" = "$((dtop * K))" ] && pass "the same top item ($top = $dtop x K)" ||
    fail "top item $top vs $dtop x K"

# training needs a dynamic item table: refused without it, naming the file
IN="$TOP_SRCDIR/input/tiny.in"
expect_error "data.path: $T/r.h5 holds raw item ids" "$FS" train "$IN" data.path="$T/r.h5" \
    device.type=cpu
grep -q "embedding.dynamic = on" "$T/err" && pass "the refusal names what is missing" ||
    fail "refusal: $(cat "$T/err")"
grep -q "^epoch" "$T/out" && fail "trained on raw ids"
expect_error "holds raw item ids" "$FS" params "$IN" data.path="$T/r.h5"

# string ids: FNV-1a 64, top bit cleared
printf 'user,item,t\nu1,A10,5\nu1,b,6\nu2,A10,1\nu3,zz\303\251,2\n' > "$T/s.csv"
expect_ok "$FS" data import --format csv "$T/s.csv" --string-ids --ids raw --user-col user \
    --item-col item --time-col t --no-rating -o "$T/s.h5"
grep -q "0 of items (merged into one item), 0 of users (kept apart)" "$T/out" &&
    pass "string ids: collisions counted" || fail "string import: $(cat "$T/out" "$T/err")"
if have_h5py; then
    if "$PY" - "$T/s.h5" <<'EOF'; then pass "string ids: the FNV-1a hashes, sorted, strings beside"; else fail "string ids"; fi
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
def h(s):
    x = 0xcbf29ce484222325
    for b in s.encode():
        x = ((x ^ b) * 0x100000001b3) % 2**64
    return x & (2**63 - 1)
items = sorted(["A10", "b", "zz\u00e9"], key=h)
assert list(f["items/ids"][:]) == [h(s) for s in items], f["items/ids"][:]
assert list(f["item_map_str"].asstr()[:]) == items
users = sorted(["u1", "u2", "u3"], key=h)
assert list(f["user_map"][:]) == [h(s) for s in users]
assert list(f["user_map_str"].asstr()[:]) == users
ev = {"u1": ["A10", "b"], "u2": ["A10"], "u3": ["zz\u00e9"]}
o, it = f["offsets"][:], f["item_ids"][:]
for u, name in enumerate(users):
    assert list(it[o[u]:o[u + 1]]) == [h(s) for s in ev[name]], name
EOF
fi

# bad ids: FILE:LINE, nothing written; --skip-bad skips and counts
printf 'userId,movieId,rating,timestamp\n1,5,1,1\n1,0,1,2\n2,-7,1,3\n2,9,1,4\n' > "$T/bad.csv"
expect_error "bad.csv:3: item id 0: raw item ids (--ids raw) are positive" \
    "$FS" data import --format csv "$T/bad.csv" --ids raw -o "$T/b.h5"
no_file "$T/b.h5"
expect_ok "$FS" data import --format csv "$T/bad.csv" --ids raw --skip-bad -o "$T/b.h5"
grep -q "bad.csv:4: item id -7" "$T/err" && grep -q "2 bad lines skipped" "$T/out" &&
    pass "--skip-bad skips ids 0 and -7" || fail "skip-bad: $(cat "$T/err")"
expect_ok "$FS" data import --format csv "$T/bad.csv" -o "$T/b2.h5" # dense: any integer
expect_error "--ids: 'sparse' is not dense or raw" "$FS" data import --format csv "$T/bad.csv" \
    --ids sparse -o "$T/b3.h5"

# damaged raw files, each refused by data check naming the dataset
if have_h5py; then
    for case in unsorted zero notlisted eventzero nolist v2raw v3dense usermap itemmap; do
        cp "$T/r.h5" "$T/x.h5"
        "$PY" - "$T/x.h5" "$case" <<'EOF' || fail "crafting $case"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r+"); c = sys.argv[2]
def put(name, v):
    del f[name]; f[name] = np.asarray(v, dtype=np.int64)
ids = f["items/ids"][:]
if c == "unsorted": ids[[3, 4]] = ids[[4, 3]]; put("items/ids", ids)
if c == "zero": ids[0] = 0; put("items/ids", ids)
if c == "notlisted": it = f["item_ids"][:]; it[5] += 2; put("item_ids", it)
if c == "eventzero": it = f["item_ids"][:]; it[2] = 0; put("item_ids", it)
if c == "nolist": del f["items/ids"]
if c == "v2raw": f.attrs["version"] = np.int64(2)
if c == "v3dense": f.attrs["ids"] = "dense"
if c == "usermap": um = f["user_map"][:]; um[[0, 1]] = um[[1, 0]]; put("user_map", um)
if c == "itemmap": f["item_map"] = ids
EOF
        case $case in
        unsorted) want="/items/ids[4] = $((10 * K)) after $((13 * K)): the item ids are sorted" ;;
        zero) want="/items/ids[0] = 0: raw item ids are positive" ;;
        notlisted) want="/item_ids[5] = " ;;
        eventzero) want="/item_ids[2] = 0: raw item ids are positive" ;;
        nolist) want="version 3 (raw item ids) but no /items/ids" ;;
        v2raw) want="attribute ids = 'raw' with version = 2" ;;
        v3dense) want="attribute ids = 'dense' with version = 3" ;;
        usermap) want="/user_map[1] = 10 after 17: the users of a raw dataset are in ascending" ;;
        itemmap) want="/item_map in a raw dataset" ;;
        esac
        expect_error "$T/x.h5: $want" "$FS" data check "$T/x.h5"
        [ "$case" = notlisted ] && { grep -q "is not in /items/ids" "$T/err" ||
            fail "notlisted: $(cat "$T/err")"; }
    done
fi
finish
