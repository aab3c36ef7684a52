#!/bin/sh
# cli_plan: 'freescale plan' and 'freescale calibrate' end to end: the CSV's
# header, rows and ranges, kk's predicted bubble reduction on heavy-tailed
# lengths (>= 90% at 256 ranks x 32), the same prediction from data.path and
# from --lengths from:FILE, no bubble at one rank; with parallel.split_long =
# auto on pareto lengths, kk on the pieces below kk without splitting and the
# point-to-point bytes reported; the refusals of bad options, the PNG (when
# gnuplot is there), and a calibration whose snippet the parameter checker and
# the planner accept.
. "$(dirname "$0")/lib.sh"
export OPENBLAS_NUM_THREADS=1
IN="$TOP_SRCDIR/input/tiny.in"
"$FS" data gen --users 2000 --items 500 --length lognormal:4.5,1.2 --max-length 5000 \
    -o "$T/ln.h5" >/dev/null 2>"$T/gen.err" || { fail "data gen: $(cat "$T/gen.err")"; finish; }
SET="data.path=$T/ln.h5 data.max_seq_len=1024"

# --- the table and the CSV ------------------------------------------------------
expect_ok "$FS" plan "$IN" $SET --ranks 1,8,64,256 --batch-per-rank 32 --csv "$T/p.csv"
cp "$T/out" "$T/table"
if [ "$(head -n 1 "$T/p.csv")" = "ranks,mode,bubble,imbalance,reduction" ]; then
    pass "CSV header"
else
    fail "CSV header: $(head -n 1 "$T/p.csv")"
fi
rows=$(($(wc -l < "$T/p.csv") - 1))
[ "$rows" -eq 12 ] && pass "CSV has 4 x 3 rows" || fail "CSV has $rows rows, expected 12"
bad=$(awk -F, 'NR > 1 && (NF != 5 || $3 < 0 || $3 > 1 || $5 < 0 || $5 > 1 || $4 < 1 - 1e-9 ||
    ($2 != "none" && $2 != "lpt" && $2 != "kk")) { print }' "$T/p.csv")
[ -z "$bad" ] && pass "CSV fractions in [0, 1], imbalance >= 1" || fail "CSV rows out of range: $bad"
awk -F, '$2 == "none" && $5 != 0 { bad = 1 } END { exit bad }' "$T/p.csv" &&
    pass "none's reduction is 0" || fail "none's reduction is not 0"
awk -F, '$1 == 1 && $3 != 0 { bad = 1 } END { exit bad }' "$T/p.csv" &&
    pass "no bubble at one rank" || fail "a bubble at one rank"
kk=$(awk -F, '$1 == 256 && $2 == "kk" { print $5 }' "$T/p.csv")
none=$(awk -F, '$1 == 256 && $2 == "none" { print $3 }' "$T/p.csv")
if awk -v r="$kk" -v b="$none" 'BEGIN { exit !(r >= 0.9 && b > 0.1) }'; then
    pass "kk reduction at 256 x 32: $kk (bubble of none $none)"
else
    fail "kk reduction at 256 x 32: '$kk' (want >= 0.9; bubble of none '$none')"
fi
grep -q '^ *256 *8192 ' "$T/table" && pass "table row of 256 ranks" ||
    fail "no table row of 256 ranks in: $(cat "$T/table")"

# --lengths from:FILE resamples the same users: the same prediction
expect_ok "$FS" plan "$IN" data.max_seq_len=1024 --lengths "from:$T/ln.h5" \
    --ranks 1,8,64,256 --batch-per-rank 32 --csv "$T/q.csv"
cmp -s "$T/p.csv" "$T/q.csv" && pass "data.path and --lengths from: agree" ||
    fail "data.path and --lengths from: differ"
# noisy actual times: kk's bubble grows, stays in [0, 1]
expect_ok "$FS" plan "$IN" $SET --ranks 256 --batch-per-rank 32 --noise 0.3 --csv "$T/n.csv"
if awk -F, -v q="$(awk -F, '$1 == 256 && $2 == "kk" { print $3 }' "$T/p.csv")" \
    '$2 == "kk" { b = $3 } END { exit !(b > q && b <= 1) }' "$T/n.csv"; then
    pass "--noise 0.3 raises kk's bubble"
else
    fail "--noise: $(cat "$T/n.csv")"
fi
# equal costs: no bubble in any mode
expect_ok "$FS" plan "$IN" --lengths fixed:50 --ranks 16 --batch-per-rank 8 --csv "$T/f.csv"
awk -F, 'NR > 1 && ($3 != 0 || $5 != 0) { bad = 1 } END { exit bad }' "$T/f.csv" &&
    pass "fixed lengths: no bubble" || fail "fixed lengths: $(cat "$T/f.csv")"
# equal counts and a given cost model
expect_ok "$FS" plan "$IN" $SET parallel.balance_equal_count=on parallel.cost_model=0,0,1 \
    --ranks 64 --batch-per-rank 16 --steps 2 --csv "$T/e.csv"
[ "$(wc -l < "$T/e.csv")" -eq 4 ] && pass "equal counts, cost 'L^2', 2 steps" ||
    fail "equal counts: $(cat "$T/e.csv")"

# --- parallel.split_long = auto: lpt and kk on the pieces, kk-whole unsplit ----------
"$FS" data gen --users 2000 --items 500 --length pareto:20,1.2 --max-length 4000 \
    -o "$T/par.h5" >/dev/null 2>"$T/gen.err" || { fail "data gen: $(cat "$T/gen.err")"; finish; }
SPL="data.path=$T/par.h5 data.max_seq_len=4096 parallel.split_long=auto"
expect_ok "$FS" plan "$IN" $SPL --ranks 8,64 --batch-per-rank 16 --csv "$T/s.csv"
cp "$T/out" "$T/stable"
if [ "$(head -n 1 "$T/s.csv")" = "ranks,mode,bubble,imbalance,reduction,time,cut,p2p_bytes" ]; then
    pass "split CSV header"
else
    fail "split CSV header: $(head -n 1 "$T/s.csv")"
fi
[ "$(awk -F, 'NR > 1 && NF == 8' "$T/s.csv" | wc -l)" -eq 8 ] &&
    [ "$(awk -F, '$2 == "kk-whole"' "$T/s.csv" | wc -l)" -eq 2 ] &&
    pass "split CSV: 2 x 4 rows of 8 fields, kk-whole among them" ||
    fail "split CSV rows: $(cat "$T/s.csv")"
for P in 8 64; do
    if awk -F, -v P="$P" '$1 == P && $2 == "kk" { k = $3; c = $7; b = $8 }
        $1 == P && $2 == "kk-whole" { w = $3 }
        END { exit !(k != "" && w > 0.1 && k < 0.5 * w && c > 0 && b > 0) }' "$T/s.csv"; then
        pass "split at $P ranks: kk bubble $(awk -F, -v P="$P" '$1 == P && $2 == "kk" { print $3 }' \
            "$T/s.csv") below kk-whole's, p2p bytes reported"
    else
        fail "split at $P ranks: $(grep "^$P," "$T/s.csv")"
    fi
done
awk -F, 'NR > 1 && ($2 == "none" || $2 == "kk-whole") && ($7 != 0 || $8 != 0) { bad = 1 }
    NR > 1 && ($3 < 0 || $3 > 1 || $4 < 1 - 1e-9 || $6 <= 0) { bad = 1 } END { exit bad }' \
    "$T/s.csv" && pass "split CSV: none and kk-whole unsplit, figures in range" ||
    fail "split CSV: $(cat "$T/s.csv")"
grep -q 'p2p/step' "$T/stable" && grep -q '^ *kk-whole ' "$T/stable" &&
    pass "split table: p2p/step column, kk-whole row" || fail "split table: $(cat "$T/stable")"
# one step: the bytes are rows x layers x 2 x 2 x d x 4 (3 x 2 x 2 x 8 x 4 = 384 per row)
expect_ok "$FS" plan "$IN" $SPL model.layers=3 model.dim=8 --ranks 32 --batch-per-rank 16 \
    --steps 1 --csv "$T/s1.csv"
awk -F, '$2 == "kk" && $8 > 0 && $8 % 384 == 0 { ok = 1 } END { exit !ok }' "$T/s1.csv" &&
    pass "p2p bytes a multiple of 384 per key/value row" || fail "p2p bytes: $(cat "$T/s1.csv")"
# equal lengths: nothing to cut, kk as kk-whole
expect_ok "$FS" plan "$IN" parallel.split_long=auto --lengths fixed:50 --ranks 16 \
    --batch-per-rank 8 --csv "$T/sf.csv"
awk -F, 'NR > 1 && ($3 != 0 || $7 != 0 || $8 != 0) { bad = 1 } END { exit bad || NR != 5 }' \
    "$T/sf.csv" && pass "split, fixed lengths: nothing cut, no bubble" ||
    fail "split, fixed lengths: $(cat "$T/sf.csv")"
expect_error "parallel.split_threshold" "$FS" plan "$IN" $SPL parallel.split_threshold=1000 \
    --ranks 8 --batch-per-rank 4
expect_ok "$FS" plan "$IN" $SPL model.type=sasrec --ranks 8 --batch-per-rank 4

# --- refusals -----------------------------------------------------------------------
P="$FS plan $IN $SET"
expect_error "--ranks" $P --ranks 0 --batch-per-rank 4
expect_error "--ranks" $P --ranks 65537 --batch-per-rank 4
expect_error "--ranks" $P --ranks 8,,16 --batch-per-rank 4
expect_error "--ranks" $P --ranks 8,x --batch-per-rank 4
expect_error "--ranks" $P --ranks "" --batch-per-rank 4
expect_error "--batch-per-rank" $P --ranks 8
expect_error "--batch-per-rank" $P --ranks 8 --batch-per-rank 0
expect_error "parallel.cost_model" $P --ranks 8 --batch-per-rank 4 parallel.cost_model=1,2
expect_error "parallel.cost_model" $P --ranks 8 --batch-per-rank 4 parallel.cost_model=1,-2,3
expect_error "--lengths" "$FS" plan "$IN" --lengths gauss:3 --ranks 8 --batch-per-rank 4
expect_error "--lengths" "$FS" plan "$IN" --lengths "from:$T/none.h5" --ranks 8 --batch-per-rank 4
expect_error "data.path" "$FS" plan "$IN" data.path="$T/none.h5" --ranks 8 --batch-per-rank 4
expect_error "unknown option" $P --rank 8 --batch-per-rank 4
expect_error "--noise" $P --ranks 8 --batch-per-rank 4 --noise -1

# --- PNG ----------------------------------------------------------------------------
mkdir "$T/emptybin"
expect_error "gnuplot" env PATH="$T/emptybin" "$FS" plan "$IN" $SET --ranks 8 \
    --batch-per-rank 4 --png "$T/no.png"
if command -v gnuplot >/dev/null 2>&1; then
    expect_ok "$FS" plan "$IN" $SET --ranks 8,64 --batch-per-rank 8 --png "$T/p.png"
    if [ "$(head -c 8 "$T/p.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
        [ "$(wc -c < "$T/p.png")" -gt 1000 ]; then
        pass "PNG written"
    else
        fail "not a PNG: $T/p.png"
    fi
else
    echo "note: gnuplot not installed, PNG output not tested"
fi

# --- under mpirun -np 1, when there is one ---------------------------------------------
if [ -n "${MPIRUN:-}" ] && [ -x "$MPIRUN" ]; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    expect_ok "$MPIRUN" -np 1 "$FS" plan "$IN" $SET --ranks 8 --batch-per-rank 4
fi

# --- calibrate ------------------------------------------------------------------------------
expect_ok "$FS" calibrate "$IN" --points 5 --reps 3 --min-ms 10
cp "$T/out" "$T/cal"
cm=$(sed -n 's/^cost_model = //p' "$T/cal")
grep -q '^\[parallel\]$' "$T/cal" && [ -n "$cm" ] && pass "calibrate snippet: $cm" ||
    fail "no snippet in: $(cat "$T/cal")"
r2=$(sed -n 's/.*R^2 = \([0-9.eE+-]*\),.*/\1/p' "$T/cal")
awk -v r="$r2" 'BEGIN { exit !(r != "" && r >= 0 && r <= 1) }' && pass "R^2 = $r2" ||
    fail "R^2 '$r2' not in [0, 1]"
[ "$(grep -c '^ *[0-9][0-9]* *[0-9][0-9]* *[0-9.]* *[0-9.]* *[+-]' "$T/cal")" -eq 5 ] &&
    pass "calibration table of 5 lengths" || fail "calibration table: $(cat "$T/cal")"
expect_ok "$FS" params "$IN" "parallel.cost_model=$cm"
grep -q "cost_model = $cm" "$T/out" && pass "params accepts the snippet" ||
    fail "params output lacks cost_model = $cm"
expect_ok "$FS" plan "$IN" $SET "parallel.cost_model=$cm" --ranks 8 --batch-per-rank 4
expect_error "calibrate" "$FS" calibrate
finish
