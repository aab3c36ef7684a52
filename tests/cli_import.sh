#!/bin/sh
# cli_import: 'freescale data import' through the program: the three formats
# on small hand-made files with hand-computed results (dense ids in ascending
# original order, stable time order with a tie, maps, rating x 10), the
# filters (--min-rating, iterated k-core), every kind of malformed input
# refused with its place and nothing left behind, --skip-bad, and, when
# present, ml-latest-small against a Python reference (csv module + sorted).
. "$(dirname "$0")/lib.sh"

O=$T/out.h5

# summary KEY: the number before KEY in the last stdout ("610 users").
summary() { sed -n "s/.* \([0-9][0-9]*\) $1[,) ].*/\1/p" "$T/out" | head -n 1; }

# h5 PYTHON-EXPR...: print what the expressions evaluate to (f = the file).
h5() { file=$1; shift; "$PY" - "$file" "$@" <<'EOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
for e in sys.argv[2:]:
    v = eval(e)
    print(" ".join(str(int(x)) for x in v) if hasattr(v, "__len__") and not isinstance(v, str) else v)
EOF
}
# h5_is FILE EXPR WANT: the expression's value printed equals WANT.
h5_is() {
    got=$(h5 "$1" "$2")
    [ "$got" = "$3" ] && pass "$2 = $3" || fail "$1: $2 = '$got', expected '$3'"
}
H5=no
if have_h5py; then H5=yes; else echo "# no h5py for /usr/bin/python3: content checks skipped"; fi

# --- csv: ids, order, tie, maps, actions ------------------------------------
# users 10,20,30 -> 0,1,2; items 100,200,500,700 -> 1,2,3,4. User 30 has a
# time tie (items 100 and 200 at t=100): file order must be kept.
cat > "$T/good.csv" <<'EOF'
userId,movieId,rating,timestamp
30,500,4.0,300
30,100,3.5,100
10,700,5,200
30,200,1.0,100
10,"500",2.5,150
20,100,4.5,50
EOF
expect_ok "$FS" data import --format csv "$T/good.csv" -o "$O"
[ "$(summary users)" = 3 ] && [ "$(summary items)" = 4 ] && [ "$(summary events)" = 6 ] &&
    [ "$(summary rows)" = 6 ] || fail "csv summary: $(cat "$T/out")"
grep -q "rows/s" "$T/out" || fail "summary lacks rows/s"
no_file "$O.tmp"
if [ $H5 = yes ]; then
    h5_is "$O" 'f["offsets"][:]' "0 2 3 6"
    h5_is "$O" 'f["item_ids"][:]' "3 4 1 1 2 3"
    h5_is "$O" 'f["timestamps"][:]' "150 200 50 100 100 300"
    h5_is "$O" 'f["actions"][:]' "25 50 45 35 10 40"
    h5_is "$O" 'f["item_map"][:]' "100 200 500 700"
    h5_is "$O" 'f["user_map"][:]' "10 20 30"
    h5_is "$O" 'f.attrs["num_items"]' 4
    h5_is "$O" 'f.attrs["num_users"]' 3
    h5_is "$O" 'str(f["actions"].dtype)' int32
fi
expect_ok "$FS" data check "$O"

# other column names, tab separator, no rating / no time columns, CRLF,
# a quoted field with the separator inside the header
printf 'item\t"u\tser"\twhen\r\n7\t-5\t9\r\n\r\n3\t-5\t8\r\n7\t2\t1\r\n' > "$T/tab.tsv"
expect_ok "$FS" data import --format csv "$T/tab.tsv" -o "$O" --delimiter tab \
    --user-col "$(printf 'u\tser')" --item-col item --time-col when --rating-col ''
grep -q ": 2 users, 2 items, 3 events (timestamps, no actions)" "$T/out" ||
    fail "tsv summary: $(cat "$T/out")"
if [ $H5 = yes ]; then
    h5_is "$O" 'f["user_map"][:]' "-5 2"
    h5_is "$O" 'f["item_ids"][:]' "1 2 2"
    h5_is "$O" '"actions" in f' False
fi
expect_ok "$FS" data import --format csv "$T/good.csv" -o "$O" --no-time --no-rating
grep -q "(no timestamps, no actions)" "$T/out" || fail "--no-time --no-rating: $(cat "$T/out")"
# without times each user's events keep file order
[ $H5 = yes ] && h5_is "$O" 'f["item_ids"][:]' "4 3 1 3 1 2"

# --- movielens ----------------------------------------------------------------
printf '1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n' > "$T/ratings.dat"
expect_ok "$FS" data import --format movielens "$T/ratings.dat" -o "$O"
grep -q ": 2 users, 2 items, 3 events (timestamps, actions = rating x 10)" "$T/out" ||
    fail "movielens summary: $(cat "$T/out")"
if [ $H5 = yes ]; then
    h5_is "$O" 'f["item_ids"][:]' "2 1 2"
    h5_is "$O" 'f["actions"][:]' "50 30 40"
    h5_is "$O" 'f["item_map"][:]' "661 1193"
fi

# --- sasrec ---------------------------------------------------------------------
printf '5 9\n5\t3\n\n2 9   \n' > "$T/seq.txt"
expect_ok "$FS" data import --format sasrec "$T/seq.txt" -o "$O"
grep -q ": 2 users, 2 items, 3 events (no timestamps, no actions)" "$T/out" ||
    fail "sasrec summary: $(cat "$T/out")"
if [ $H5 = yes ]; then
    h5_is "$O" 'f["offsets"][:]' "0 1 3"
    h5_is "$O" 'f["item_ids"][:]' "2 2 1"
fi

# --- filters --------------------------------------------------------------------
# 2-core by hand: u3 (1 event) and item 4 (1 event) go, then u4 has 1 event
# and goes, then item 3 has 1 event and goes: left u1, u2 x items 1, 2.
# --min-rating 3 first drops the 2.5 row (u5), which would otherwise
# complete nothing (u5 has one event).
cat > "$T/core.csv" <<'EOF'
userId,movieId,rating,timestamp
1,1,4,1
1,2,4,2
1,3,4,3
2,1,4,1
2,2,4,2
3,1,4,1
4,3,4,1
4,4,4,2
5,1,2.5,1
EOF
expect_ok "$FS" data import --format csv "$T/core.csv" -o "$O" --min-rating 3 \
    --min-user-events 2 --min-item-events 2
grep -q "1 below --min-rating" "$T/out" && grep -q "4 events dropped" "$T/out" &&
    grep -q ": 2 users, 2 items, 4 events" "$T/out" || fail "k-core: $(cat "$T/out")"
if [ $H5 = yes ]; then
    h5_is "$O" 'f["user_map"][:]' "1 2"
    h5_is "$O" 'f["item_map"][:]' "1 2"
    h5_is "$O" 'f["item_ids"][:]' "1 2 1 2"
fi
expect_ok "$FS" data import --format csv "$T/core.csv" -o "$O" --min-user-events 3
grep -q ": 1 users, 3 items, 3 events" "$T/out" || fail "--min-user-events 3: $(cat "$T/out")"

# --- malformed input: refused with its place, nothing left --------------------
bad() { # bad MESSAGE FILE-CONTENT [options]
    msg=$1; printf '%b' "$2" > "$T/bad.in"; shift 2
    expect_error "$msg" "$FS" data import "$@" "$T/bad.in" -o "$O"
    no_file "$O"
}
rm -f "$O"
H='userId,movieId,rating,timestamp\n'
bad "bad.in:1: no column 'rating' in the header (columns: 'userId', 'movieId', 'stars', 'timestamp')" \
    'userId,movieId,stars,timestamp\n1,2,3,4\n' --format csv
bad "bad.in:1: no column 'when' in the header" "$H" --format csv --time-col when
bad "bad.in:3: field 'rating' = 'abc' is not a number" "${H}1,2,3,4\n1,2,abc,4\n" --format csv
bad "bad.in:2: field 'userId' = '1.5' is not an integer" "${H}1.5,2,3,4\n" --format csv
bad "bad.in:2: field 'timestamp' is empty" "${H}1,2,3,\n" --format csv
bad "bad.in: empty file (no header)" '' --format csv
bad "bad.in: empty file (no header)" '\n  \n' --format csv
bad "bad.in: no data rows after the header" "$H" --format csv
bad "bad.in:3: 3 fields, expected 4 as in the header" "${H}1,2,3,4\n1,2,3\n" --format csv
bad "bad.in:2: 5 fields, expected 4 as in the header" "${H}1,2,3,4,5\n" --format csv
bad "bad.in:2: malformed CSV quoting at column 4" "${H}1,2\",3,4\n" --format csv
bad "bad.in:2: quoted field not closed at the end of the file" "${H}1,\"2,3,4\n5,6,7,8\n" \
    --format csv
bad "bad.in:4: field 'movieId' = 'x' is not an integer" \
    'userId,movieId,rating,timestamp,title\n1,2,3,4,"two\nlines"\n1,x,3,4,t\n' --format csv
bad "bad.in:2: expected 4 fields user::item::rating::timestamp separated by '::', found 3" \
    '1::2::3::4\n1:2::3::4\n' --format movielens
bad "bad.in:1: expected 4 fields" '1 2 3 4\n' --format movielens
bad "bad.in:1: field 'rating' = 'x' is not a number" '1::2::x::4\n' --format movielens
bad "bad.in: empty file (no events)" '' --format movielens
bad "bad.in:2: expected 2 fields 'user item', found 3" '1 2\n1 2 3\n' --format sasrec
bad "bad.in:1: field 'item' = 'b' is not an integer" '1 b\n' --format sasrec
bad "no events left: 1 rows, 0 bad lines skipped, 1 below --min-rating" "${H}1,2,1,4\n" \
    --format csv --min-rating 2
bad "nothing left after the k-core filter" "${H}1,2,1,4\n" --format csv --min-user-events 2
bad "bad.in:2: rating 1e+10 is out of range" "${H}1,2,1e10,4\n" --format csv
expect_error "cannot open" "$FS" data import --format csv "$T/missing.csv" -o "$O"
expect_error "cannot create output file" "$FS" data import --format csv "$T/good.csv" \
    -o "$T/no/such/dir/x.h5"
expect_error "missing --format" "$FS" data import "$T/good.csv" -o "$O"
expect_error "--format: 'json' is not one of movielens, csv, sasrec" \
    "$FS" data import --format json "$T/good.csv" -o "$O"
expect_error "missing -o OUT.h5" "$FS" data import --format csv "$T/good.csv"
expect_error "--user-col applies to --format csv and jsonl only" \
    "$FS" data import --format sasrec "$T/seq.txt" -o "$O" --user-col u
expect_error "--min-rating needs ratings" \
    "$FS" data import --format csv "$T/good.csv" -o "$O" --no-rating --min-rating 3
expect_error "--min-user-events: 'x' is not a whole number" \
    "$FS" data import --format csv "$T/good.csv" -o "$O" --min-user-events x
expect_error "unknown option '--frobnicate'" \
    "$FS" data import --format csv "$T/good.csv" -o "$O" --frobnicate
no_file "$O"
expect_ok "$FS" data import --help
grep -q -- "--min-item-events" "$T/out" && grep -q "round(rating x 10)" "$T/out" ||
    fail "--help incomplete"

# --- --skip-bad ---------------------------------------------------------------
printf "${H}1,2,3,4\n1,x,3,4\n2,2,3\n2,3,4,5\n3,\"4\"x,1,1\n" > "$T/some_bad.csv"
expect_ok "$FS" data import --format csv "$T/some_bad.csv" -o "$O" --skip-bad
grep -q "5 rows, 3 bad lines skipped" "$T/out" && grep -q ": 2 users, 2 items, 2 events" "$T/out" ||
    fail "--skip-bad summary: $(cat "$T/out")"
grep -q "some_bad.csv:3: field 'movieId' = 'x' is not an integer.*(skipped)" "$T/err" &&
    grep -q "some_bad.csv:4: 3 fields" "$T/err" && grep -q "some_bad.csv:6: malformed" "$T/err" ||
    fail "--skip-bad warnings: $(cat "$T/err")"
awk 'BEGIN { print "userId,movieId,rating,timestamp"; for (i = 0; i < 30; i++) print "1,x,1,1";
             print "1,1,1,1" }' > "$T/many_bad.csv"
expect_ok "$FS" data import --format csv "$T/many_bad.csv" -o "$O" --skip-bad
[ "$(grep -c '(skipped)' "$T/err")" = 10 ] && grep -q "30 bad lines skipped in all" "$T/err" ||
    fail "--skip-bad should show 10 warnings and the total: $(cat "$T/err")"

# --- ml-latest-small, against a Python reference -----------------------------
ML=$TOP_SRCDIR/../shared/data/ml-latest-small/ratings.csv
if [ -f "$ML" ]; then
    expect_ok "$FS" data import --format csv "$ML" -o "$O"
    grep -q ": 610 users, 9724 items, 100836 events (timestamps, actions = rating x 10)" \
        "$T/out" || fail "ml-latest-small: $(cat "$T/out")"
    expect_ok "$FS" data check "$O"
    if [ $H5 = yes ]; then
        expect_ok "$FS" data import --format csv "$ML" -o "$T/core.h5" --min-rating 2 \
            --min-user-events 20 --min-item-events 5
        for args in "$O 0 1 1" "$T/core.h5 2 20 5"; do
            set -- $args
            if "$PY" - "$ML" "$@" <<'EOF'
import csv, sys, h5py, numpy as np
from collections import Counter, defaultdict
path, out, minr, ku, ki = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
with open(path, newline="") as fh:
    rd = csv.reader(fh)
    head = next(rd)
    c = [head.index(n) for n in ("userId", "movieId", "rating", "timestamp")]
    ev = [(int(r[c[0]]), int(r[c[1]]), float(r[c[2]]), int(r[c[3]])) for r in rd if r]
ev = [e for e in ev if e[2] >= minr]
while True:
    cu, ci = Counter(e[0] for e in ev), Counter(e[1] for e in ev)
    kept = [e for e in ev if cu[e[0]] >= ku and ci[e[1]] >= ki]
    if len(kept) == len(ev):
        break
    ev = kept
users, items = sorted({e[0] for e in ev}), sorted({e[1] for e in ev})
rank = {v: i + 1 for i, v in enumerate(items)}
by = defaultdict(list)
for e in ev:
    by[e[0]].append(e)
seqs = [sorted(by[u], key=lambda e: e[3]) for u in users]  # stable
f = h5py.File(out, "r")
want = {
    "offsets": np.cumsum([0] + [len(s) for s in seqs]),
    "item_ids": [rank[e[1]] for s in seqs for e in s],
    "timestamps": [e[3] for s in seqs for e in s],
    "actions": [int(np.floor(e[2] * 10 + 0.5)) for s in seqs for e in s],
    "item_map": items, "user_map": users}
bad = [k for k, v in want.items() if not np.array_equal(f[k][:], np.asarray(v))]
sys.exit("differ from the reference: %s" % bad if bad else 0)
EOF
            then pass "ml-latest-small equals the Python reference (min-rating $2, k-core $3,$4)"
            else fail "ml-latest-small differs from the Python reference ($args)"; fi
        done
    fi
else
    echo "# $ML not found: ml-latest-small checks skipped"
fi

finish
