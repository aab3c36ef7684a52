#!/bin/sh
# cli_import_errors: every kind of bad input to the new readers of 'freescale
# data import' (headerless csv by position, string ids, JSON lines, gzip,
# standard input) is refused with the file and line, a non-zero exit, and
# no output left behind; --skip-bad skips bad lines but never a broken
# gzip stream; bad options are refused before reading.
. "$(dirname "$0")/lib.sh"

O=$T/out.h5
# bad MESSAGE CONTENT [options]: CONTENT (printf %b) in bad.in is refused
bad() {
    msg=$1; printf '%b' "$2" > "$T/bad.in"; shift 2
    expect_error "$msg" "$FS" data import "$@" "$T/bad.in" -o "$O"
    no_file "$O"
}

# --- csv without a header, columns by position, string ids --------------------
NH="--format csv --no-header"
bad "bad.in:1: field 'user' = 'A2SUAM1J3GNN3B' is not an integer (string ids: --user-ids string)" \
    'A2SUAM1J3GNN3B,0000013714,5.0,1387670400\n' $NH
bad "bad.in:2: field 'item' = '000100039X' is not an integer (string ids: --item-ids string)" \
    '1,2,5,7\n1,000100039X,5.0,1387670400\n' $NH
bad "bad.in:2: 3 fields, but --columns puts 'time' in field 4" 'a,b,1,2\na,b,1\n' $NH --string-ids
bad "bad.in:1: 2 fields, but --columns puts 'item' in field 3" 'a,b\n' $NH --string-ids \
    --columns user,-,item
bad "bad.in:3: 1 field, but --columns puts 'item' in field 2" 'a,b\n\na\n' $NH --string-ids \
    --columns user,item
bad "bad.in:1: field 'rating' = 'five' is not a number" 'a,b,five,1\n' $NH --string-ids
bad "bad.in:1: field 'time' = '2013-12-17' is not an integer" 'a,b,5,2013-12-17\n' $NH \
    --string-ids
bad "bad.in:1: field 'item' is empty" 'a, ,5,1\n' $NH --string-ids
long=$(awk 'BEGIN { while (n++ < 1100) printf "x" }')
bad "bad.in:1: field 'user' = 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...' is longer than 1024 bytes" \
    "$long,b,5,1\n" $NH --string-ids
bad "bad.in: empty file (no events)" '\n\n' $NH --string-ids
bad "bad.in:2: 2 fields, but --columns puts 'time' in field 4" '1::2::3::4\n1::2\n' $NH \
    --delimiter '::'
bad "bad.in:1: field 'user' = 'u1' is not an integer" 'u1::2::3::4\n' $NH --delimiter '::'
# a header with --columns: the header line is skipped, the rows checked
bad "bad.in:2: field 'item' = 'x' is not an integer" 'user,item\n1,x\n' --format csv \
    --columns user,item
bad "bad.in: no data rows after the header" 'user,item\n' --format csv --columns user,item

# --- JSON lines -----------------------------------------------------------------
A="--format jsonl --user-col reviewerID --item-col asin --rating-col overall \
--time-col unixReviewTime"
G='{"reviewerID": "A1", "asin": "B1", "overall": 5.0, "unixReviewTime": 1}\n'
bad "bad.in:2: malformed JSON at column 29: object property name separator ':' expected" \
    "${G}"'{"reviewerID": "A1", "asin" "B1"}\n' $A --string-ids
bad "bad.in:1: malformed JSON: the value is not complete at the end of the line" \
    '{"reviewerID": "A1", "asin": "B1",\n"overall": 5}\n' $A --string-ids
bad "bad.in:1: malformed JSON at column" '{"reviewerID": "A1"} x\n' $A --string-ids
bad "bad.in:1: malformed JSON at column 1" "{'reviewerID': 'A1'}\n" $A --string-ids
bad "bad.in:2: not a JSON object but a JSON array" "${G}[1, 2]\n" $A --string-ids
bad "bad.in:1: no field 'unixReviewTime' (fields: 'reviewerID', 'asin', 'overall')" \
    '{"reviewerID": "A1", "asin": "B1", "overall": 5.0}\n' $A --string-ids
bad "bad.in:1: no field 'asin' (fields: 'reviewerID')" '{"reviewerID": "A1"}\n' $A --string-ids
bad "bad.in:1: field 'asin' = \"0000013714\" is a string, expected an integer (string ids: --item-ids string)" \
    '{"reviewerID": 1, "asin": "0000013714", "overall": 5.0, "unixReviewTime": 1}\n' $A
bad "bad.in:1: field 'overall' = \"5.0\" is a string, expected a number" \
    '{"reviewerID": "A1", "asin": "B1", "overall": "5.0", "unixReviewTime": 1}\n' $A --string-ids
bad "bad.in:1: field 'unixReviewTime' = 1.5 is a number with a fraction, expected an integer" \
    '{"reviewerID": "A1", "asin": "B1", "overall": 5, "unixReviewTime": 1.5}\n' $A --string-ids
bad "bad.in:1: field 'reviewerID' is null, expected a string or an integer" \
    '{"reviewerID": null, "asin": "B1", "overall": 5, "unixReviewTime": 1}\n' $A --string-ids
bad "bad.in:1: field 'asin' = {\"id\":1} is an object, expected a string or an integer" \
    '{"reviewerID": "A1", "asin": {"id": 1}, "overall": 5, "unixReviewTime": 1}\n' $A --string-ids
bad "bad.in:1: field 'asin' is empty" \
    '{"reviewerID": "A1", "asin": "", "overall": 5, "unixReviewTime": 1}\n' $A --string-ids
bad "bad.in: empty file (no events)" '\n' $A --string-ids

# --skip-bad: bad JSON lines are skipped and counted
printf "${G}{oops\n${G}"'{"reviewerID": "A2"}\n' > "$T/some_bad.jsonl"
expect_ok "$FS" data import $A --string-ids --skip-bad "$T/some_bad.jsonl" -o "$O"
grep -q "4 rows, 2 bad lines skipped" "$T/out" && grep -q ": 1 users, 1 items, 2 events" "$T/out" ||
    fail "jsonl --skip-bad: $(cat "$T/out")"
grep -q "some_bad.jsonl:2: malformed JSON" "$T/err" &&
    grep -q "some_bad.jsonl:4: no field 'asin'" "$T/err" || fail "jsonl warnings: $(cat "$T/err")"
rm -f "$O"

# --- gzip ---------------------------------------------------------------------------
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "%d,%d,%d.0,%d\n", i % 97, i % 89, i % 5, i }' \
    > "$T/big.csv"
gzip -c "$T/big.csv" > "$T/big.csv.gz"
size=$(wc -c < "$T/big.csv.gz")
head -c $((size / 2)) "$T/big.csv.gz" > "$T/cut.csv.gz"
expect_error "gzip data ends early (truncated file?)" "$FS" data import $NH "$T/cut.csv.gz" -o "$O"
grep -q "cut.csv.gz:[0-9][0-9]*: gzip data ends early" "$T/err" || fail "no line: $(cat "$T/err")"
no_file "$O"
# the stream error comes first, even where --skip-bad would skip the cut line
expect_error "gzip data ends early" "$FS" data import $NH --skip-bad "$T/cut.csv.gz" -o "$O"
no_file "$O"
expect_error "<stdin>:" sh -c '"$1" data import $2 - -o "$3" < "$4"' sh "$FS" "$NH" "$O" \
    "$T/cut.csv.gz"
grep -q "gzip data ends early" "$T/err" || fail "stdin truncation: $(cat "$T/err")"
no_file "$O"
# only the 10-byte header and the start of the data: cut at line 1
head -c 12 "$T/big.csv.gz" > "$T/cut1.csv.gz"
expect_error "cut1.csv.gz:1: gzip data ends early" "$FS" data import $NH "$T/cut1.csv.gz" -o "$O"
# a corrupt byte in the middle: inflate or the CRC at the end refuses it
"$PY" -c 'import sys; b = bytearray(open(sys.argv[1], "rb").read()); b[len(b) // 2] ^= 0x55;
open(sys.argv[2], "wb").write(b)' "$T/big.csv.gz" "$T/corrupt.csv.gz"
expect_error "corrupt gzip data: zlib:" "$FS" data import $NH "$T/corrupt.csv.gz" -o "$O"
no_file "$O"
printf '1,2,3,4\n' > "$T/plain.gz"
expect_error "plain.gz: not gzip data (no gzip header), though the name ends in .gz" \
    "$FS" data import $NH "$T/plain.gz" -o "$O"
# a bad line inside gzip data names its line in the decompressed text
{ cat "$T/big.csv"; echo "7,x,1,1"; } | gzip > "$T/badline.csv.gz"
expect_error "badline.csv.gz:20001: field 'item' = 'x' is not an integer" \
    "$FS" data import $NH "$T/badline.csv.gz" -o "$O"
no_file "$O"
# and so does one on standard input
expect_error "<stdin>:2: 1 field, but --columns puts 'item' in field 2" \
    sh -c 'printf "1,2\n3\n" | "$1" data import --format csv --no-header --columns user,item - -o "$2"' sh "$FS" "$O"
no_file "$O"
expect_error "nosuch.csv.gz: cannot open: No such file" \
    "$FS" data import $NH "$T/nosuch.csv.gz" -o "$O"

# --- options --------------------------------------------------------------------
G2=$T/g.csv
printf '1,2,3,4\n' > "$G2"
expect_error "--columns: 'stars' (column 3 of 'user,item,stars') is not one of user, item, rating, time, -" \
    "$FS" data import $NH --columns user,item,stars "$G2" -o "$O"
expect_error "--columns: 'user' appears twice" "$FS" data import $NH --columns user,item,user \
    "$G2" -o "$O"
expect_error "--columns: 'user,-,rating' lacks item" "$FS" data import $NH --columns user,-,rating \
    "$G2" -o "$O"
expect_error "--user-col and --columns: choose the columns by name or by position, not both" \
    "$FS" data import $NH --columns user,item --user-col u "$G2" -o "$O"
expect_error "--columns applies to --format csv only" \
    "$FS" data import --format jsonl --columns user,item "$G2" -o "$O"
expect_error "--no-header applies to --format csv only" \
    "$FS" data import --format movielens --no-header "$G2" -o "$O"
expect_error "--user-ids: 'str' is not int or string" \
    "$FS" data import $NH --user-ids str "$G2" -o "$O"
expect_error "--delimiter: '\"' is not one or more characters other than quotes" \
    "$FS" data import $NH --delimiter '"' "$G2" -o "$O"
expect_error "--min-rating needs ratings" \
    "$FS" data import $NH --columns user,item --min-rating 3 "$G2" -o "$O"
no_file "$O"

# under a launcher: a data tool's error once, without Open MPI's abort text
# (several ranks: refused as serial; one: the tool's own error)
if [ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ]; then
    need_mpirun
    error_once 2 "'freescale data' tools are serial" data import $NH "$T/cut.csv.gz" -o "$O"
    error_once 2 "'freescale data' tools are serial" data gen --users 5 --items 5 -o "$O"
    error_once 3 "'freescale data' tools are serial" data stats "$O"
    error_once 1 "gzip data ends early" data import $NH "$T/cut.csv.gz" -o "$O"
    no_file "$O"
fi
finish
