#!/bin/sh
# cli_import_formats: 'freescale data import' on the published formats of
# the benchmark datasets, as small files made here with hand-computed
# results: Amazon's headerless ratings CSV with string ids (both column
# orders, by position), Amazon's gzipped JSON lines, standard input (plain
# and gzip), a '::' delimiter through --format csv, mixed integer and string
# ids, and the k-core on string ids. Checks users, items, events, the maps
# (/user_map_str, /item_map_str), the order and that the file reads back.
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: no h5py for $PY (the content checks need it)"; exit 77; }

# h5 FILE EXPR...: print each expression's value (f = the file): numbers and
# strings of an array separated by spaces.
h5() { file=$1; shift; "$PY" - "$file" "$@" <<'EOF'
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], "r")
def show(v):
    if isinstance(v, h5py.Dataset):
        v = v.asstr()[:] if h5py.check_string_dtype(v.dtype) else v[:]
    if isinstance(v, np.ndarray):
        return " ".join(str(x) if isinstance(x, str) else str(int(x)) for x in v)
    return str(v)
for e in sys.argv[2:]:
    print(show(eval(e)))
EOF
}
h5_is() { # h5_is FILE EXPR WANT
    got=$(h5 "$1" "$2")
    [ "$got" = "$3" ] && pass "$(basename "$1"): $2 = $3" || fail "$1: $2 = '$got', expected '$3'"
}
# same_h5 A B: every dataset and attribute of A and B is equal
same_h5() {
    if "$PY" - "$1" "$2" <<'EOF'
import sys, h5py, numpy as np
a, b = (h5py.File(p, "r") for p in sys.argv[1:3])
names = lambda f: sorted(n for n in (lambda l: (f.visit(l.append), l)[1])([]))
assert names(a) == names(b), (names(a), names(b))
assert dict(a.attrs) == dict(b.attrs)
for k in names(a):
    if isinstance(a[k], h5py.Dataset):
        assert a[k].dtype == b[k].dtype and np.array_equal(a[k][:], b[k][:]), k
    assert dict(a[k].attrs) == dict(b[k].attrs), k
EOF
    then pass "$(basename "$1") equals $(basename "$2")"; else fail "$1 differs from $2"; fi
}

# --- Amazon ratings: user,item,rating,time without a header, string ids ----
# users in bytewise order A10X < A1ZZ < A2SU... -> 0, 1, 2; items 0000013714,
# 000100039X, 0451524934, B00001 -> 1..4 (leading zeros kept: ids are
# strings). A1ZZ has a time tie: file order (0451524934, then 0000013714).
cat > "$T/ratings_Books.csv" <<'EOF'
A2SUAM1J3GNN3B,0000013714,5.0,1387670400
A1ZZ,0451524934,4.0,1387670000
A2SUAM1J3GNN3B,000100039X,3.0,1300000000
A10X,B00001,1.0,1000
A1ZZ,0000013714,2.0,1387670000
A10X,0451524934,4.5,999
EOF
check_books() { # check_books FILE: the hand-computed dataset of ratings_Books.csv
    h5_is "$1" 'f.attrs["num_users"]' 3
    h5_is "$1" 'f.attrs["num_items"]' 4
    h5_is "$1" 'f["offsets"]' "0 2 4 6"
    h5_is "$1" 'f["item_ids"]' "3 4 3 1 2 1"
    h5_is "$1" 'f["timestamps"]' "999 1000 1387670000 1387670000 1300000000 1387670400"
    h5_is "$1" 'f["actions"]' "45 10 40 20 30 50"
    h5_is "$1" 'f["user_map_str"]' "A10X A1ZZ A2SUAM1J3GNN3B"
    h5_is "$1" 'f["item_map_str"]' "0000013714 000100039X 0451524934 B00001"
    h5_is "$1" '"user_map" in f or "item_map" in f' False
    h5_is "$1" 'type(f.attrs["format"]).__name__' str
}
B=$T/books.h5
expect_ok "$FS" data import --format csv --no-header --string-ids "$T/ratings_Books.csv" -o "$B"
grep -q ": 3 users, 4 items, 6 events (timestamps, actions = rating x 10)" "$T/out" ||
    fail "books summary: $(cat "$T/out")"
check_books "$B"
expect_ok "$FS" data check "$B"
no_file "$B.tmp"

# the same with the columns named, gzip-compressed, and on standard input
gzip -c "$T/ratings_Books.csv" > "$T/ratings_Books.csv.gz"
expect_ok "$FS" data import --format csv --no-header --columns user,item,rating,time \
    --user-ids string --item-ids string "$T/ratings_Books.csv.gz" -o "$T/b-gz.h5"
grep -q "(csv, gzip)" "$T/out" || fail "gzip not reported: $(cat "$T/out")"
same_h5 "$B" "$T/b-gz.h5"
expect_ok sh -c '"$1" data import --format csv --no-header --string-ids - -o "$2" < "$3"' sh \
    "$FS" "$T/b-stdin.h5" "$T/ratings_Books.csv"
grep -q "read <stdin> (csv)" "$T/out" || fail "stdin not reported: $(cat "$T/out")"
same_h5 "$B" "$T/b-stdin.h5"
expect_ok sh -c '"$1" data import --format csv --no-header --string-ids - -o "$2" < "$3"' sh \
    "$FS" "$T/b-stdin-gz.h5" "$T/ratings_Books.csv.gz"
same_h5 "$B" "$T/b-stdin-gz.h5"

# the 2018 files put the item first; extra columns, a skipped one, a header
awk -F, '{ print $2 "," $1 "," $3 "," $4 }' "$T/ratings_Books.csv" > "$T/Books.csv"
expect_ok "$FS" data import --format csv --no-header --columns item,user,rating,time \
    --string-ids "$T/Books.csv" -o "$T/b-2018.h5"
same_h5 "$B" "$T/b-2018.h5"
{ echo 'user|junk|item|stars|when|extra'
  awk -F, '{ print $1 "|x y|" $2 "|" $3 "|" $4 "|z" }' "$T/ratings_Books.csv"; } > "$T/pipe.txt"
expect_ok "$FS" data import --format csv --delimiter '|' --columns user,-,item,rating,time \
    --string-ids "$T/pipe.txt" -o "$T/b-pipe.h5"
same_h5 "$B" "$T/b-pipe.h5"
# trailing columns left out: no rating, no time (events keep file order)
expect_ok "$FS" data import --format csv --no-header --columns user,item --string-ids \
    "$T/ratings_Books.csv" -o "$T/b-ui.h5"
grep -q ": 3 users, 4 items, 6 events (no timestamps, no actions)" "$T/out" ||
    fail "--columns user,item: $(cat "$T/out")"
h5_is "$T/b-ui.h5" 'f["item_ids"]' "4 3 3 1 1 2"

# --- Amazon 5-core reviews: JSON lines, gzipped -------------------------------
# the same six events, with the fields the published files carry (nested
# objects, arrays, text with commas and quotes, non-ASCII names) in any order
cat > "$T/Books_5.json" <<'EOF'
{"overall": 5.0, "verified": true, "reviewTime": "12 17, 2013", "reviewerID": "A2SUAM1J3GNN3B", "asin": "0000013714", "style": {"Format:": " Hardcover"}, "reviewerName": "J. McDonald", "reviewText": "Read it, \"loved\" it", "summary": "Great", "unixReviewTime": 1387670400}
{"reviewerID": "A1ZZ", "asin": "0451524934", "reviewerName": "Zoë", "overall": 4.0, "unixReviewTime": 1387670000, "image": ["https://x/1.jpg"]}
{"overall": 3.0, "reviewerID": "A2SUAM1J3GNN3B", "asin": "000100039X", "unixReviewTime": 1300000000, "vote": "2"}

{"overall": 1.0, "reviewerID": "A10X", "asin": "B00001", "unixReviewTime": 1000}
{"overall": 2, "reviewerID": "A1ZZ", "asin": "0000013714", "unixReviewTime": 1387670000}
{"overall": 4.5, "reviewerID": "A10X", "asin": "0451524934", "unixReviewTime": 999}
EOF
gzip -c "$T/Books_5.json" > "$T/Books_5.json.gz"
AMZ="--user-col reviewerID --item-col asin --rating-col overall --time-col unixReviewTime"
expect_ok "$FS" data import --format jsonl $AMZ --string-ids "$T/Books_5.json.gz" -o "$T/j.h5"
grep -q "(jsonl, gzip): 7 lines, 6 rows" "$T/out" &&
    grep -q ": 3 users, 4 items, 6 events" "$T/out" || fail "jsonl summary: $(cat "$T/out")"
check_books "$T/j.h5"
same_h5 "$B" "$T/j.h5"
expect_ok sh -c '"$1" data import --format jsonl $2 --string-ids - -o "$3" < "$4"' sh \
    "$FS" "$AMZ" "$T/j-stdin.h5" "$T/Books_5.json.gz"
same_h5 "$B" "$T/j-stdin.h5"
# the 5-core of the published preprocessing, on string ids: A10X's and
# A2SU's 2 events survive a 2-core only while their items do: items
# 0451524934 (2 events) and 0000013714 (2) stay, B00001 and 000100039X go,
# then A10X and A2SU have 1 event each and go, then both items have 1: empty.
expect_error "nothing left after the k-core filter" "$FS" data import --format jsonl $AMZ \
    --string-ids "$T/Books_5.json.gz" -o "$T/core.h5" --min-user-events 2 --min-item-events 2
no_file "$T/core.h5"
expect_ok "$FS" data import --format jsonl $AMZ --string-ids "$T/Books_5.json.gz" \
    -o "$T/core.h5" --min-item-events 2
h5_is "$T/core.h5" 'f["item_map_str"]' "0000013714 0451524934"
h5_is "$T/core.h5" 'f["user_map_str"]' "A10X A1ZZ A2SUAM1J3GNN3B"
h5_is "$T/core.h5" 'f["item_ids"]' "2 2 1 1"

# --- integer users, string items; JSON integers as ids ------------------------
printf '{"u": 20, "i": "b", "t": 5}\n{"u": 3, "i": 7, "t": 1}\n{"u": 20, "i": "a", "t": 2}\n' \
    > "$T/mixed.jsonl"
expect_ok "$FS" data import --format jsonl --user-col u --item-col i --time-col t \
    --rating-col '' --item-ids string "$T/mixed.jsonl" -o "$T/mixed.h5"
h5_is "$T/mixed.h5" 'f["user_map"]' "3 20"      # numeric order: 3 < 20
h5_is "$T/mixed.h5" 'f["item_map_str"]' "7 a b" # the integer 7 as the id "7"
h5_is "$T/mixed.h5" 'f["item_ids"]' "1 2 3"
h5_is "$T/mixed.h5" '"actions" in f or "item_map" in f or "user_map_str" in f' False

# --- '::' through --format csv equals --format movielens --------------------
printf '1::1193::5::978300760\n1::661::3::978302109\n2::1193::4::978298413\n' > "$T/ratings.dat"
expect_ok "$FS" data import --format movielens "$T/ratings.dat" -o "$T/ml.h5"
# (movielens keeps the rating as /events/rating by default: --event-cols by position)
expect_ok "$FS" data import --format csv --no-header --delimiter '::' "$T/ratings.dat" \
    --event-cols rating:float -o "$T/ml-csv.h5"
same_h5 "$T/ml.h5" "$T/ml-csv.h5"
# ML-20M's ratings.csv (a header, integer ids) is the default of --format csv
printf 'userId,movieId,rating,timestamp\n1,2,3.5,1112486027\n1,29,3.5,1112484676\n' | gzip \
    > "$T/ml20m.csv.gz"
expect_ok "$FS" data import --format csv "$T/ml20m.csv.gz" -o "$T/ml20.h5"
h5_is "$T/ml20.h5" 'f["item_map"]' "2 29"
h5_is "$T/ml20.h5" 'f["item_ids"]' "2 1"

finish
