#!/bin/sh
# cli_gen_stats: 'freescale data gen', 'data stats' and 'data check' through
# the program: determinism (same seed, same content, whatever the chunk
# size), the length distributions' ranges, item ids in range, stats figures
# against numpy (when /usr/bin/python3 has h5py), Zipf popularity against
# theory, from: resampling, and bad options refused with no file left.
. "$(dirname "$0")/lib.sh"

# val KEY: the value of 'KEY: value' in the last command's stdout ($T/out),
# up to the first space.
val() { awk -v k="$1" 'index($0, k ": ") == 1 { v = substr($0, length(k) + 3); sub(/ .*/, "", v); print v; exit }' "$T/out"; }

# content FILE: every dataset and attribute of FILE as text, without its name.
content() { h5dump "$1" | sed 1d; }

# --- determinism ---------------------------------------------------------
G="--users 500 --items 300 --length lognormal:2.5,0.8 --timestamps --actions"
expect_ok "$FS" data gen $G --seed 7 -o "$T/a.h5"
grep -q "data gen: wrote $T/a.h5: 500 users, 300 items, [0-9]* events" "$T/out" ||
    fail "gen summary: $(cat "$T/out")"
grep -q "events/s" "$T/out" || fail "gen summary lacks events/s"
expect_ok "$FS" data gen $G --seed 7 -o "$T/b.h5"
expect_ok "$FS" data gen $G --seed 7 --chunk-events 7 -o "$T/c.h5"
expect_ok "$FS" data gen $G --seed 8 -o "$T/d.h5"
expect_ok "$FS" data gen --users 500 --items 300 --length lognormal:2.5,0.8 --seed 7 -o "$T/e.h5"
if command -v h5dump >/dev/null 2>&1; then
    content "$T/a.h5" > "$T/a.txt"
    content "$T/b.h5" > "$T/b.txt"
    content "$T/c.h5" > "$T/c.txt"
    content "$T/d.h5" > "$T/d.txt"
    cmp -s "$T/a.txt" "$T/b.txt" && pass "same seed, same content" || fail "same seed differs"
    cmp -s "$T/a.txt" "$T/c.txt" && pass "chunking does not change content" ||
        fail "--chunk-events 7 changed the content"
    cmp -s "$T/a.txt" "$T/d.txt" && fail "seeds 7 and 8 gave the same content" ||
        pass "different seed, different content"
    # items and lengths do not depend on whether timestamps/actions are written
    h5dump -d /item_ids -d /offsets "$T/a.h5" | sed 1d > "$T/a2.txt"
    h5dump -d /item_ids -d /offsets "$T/e.h5" | sed 1d > "$T/e2.txt"
    cmp -s "$T/a2.txt" "$T/e2.txt" && pass "items independent of --timestamps/--actions" ||
        fail "--timestamps/--actions changed the items"
else
    echo "# h5dump not found: content comparisons skipped"
fi

# --- check and stats on a good file ----------------------------------------
expect_ok "$FS" data check "$T/a.h5"
grep -q "^$T/a.h5: ok (500 users, 300 items, [0-9]* events, 0 features)$" "$T/out" ||
    fail "check line: $(cat "$T/out")"
expect_ok "$FS" data stats "$T/a.h5"
[ "$(val users)" = 500 ] && [ "$(val items)" = 300 ] || fail "stats sizes: $(head -4 "$T/out")"
[ "$(val timestamps)" = yes ] && [ "$(val actions)" = yes ] || fail "stats optional datasets"
grep -q "^validated: yes" "$T/out" || fail "stats did not validate"
grep -q "^timestamp min: [0-9]* (2020-" "$T/out" || fail "timestamp range missing"
grep -q "^  length 8\.\.15: [0-9]* ([0-9.]*%) #" "$T/out" || fail "histogram line missing"
grep -q "^embedding fp32 weights (dim 50): 60200 bytes" "$T/out" ||
    fail "embedding memory at dim 50: $(grep embedding "$T/out")"
grep -q "^embedding fp32 weights + Adam m, v (x3, dim 50): 180600 bytes" "$T/out" ||
    fail "embedding memory with Adam"
expect_ok "$FS" data stats "$T/a.h5" --dim 8 --no-validate
grep -q "^embedding fp32 weights (dim 8): 9632 bytes" "$T/out" || fail "--dim 8"
grep -q "^validated: no" "$T/out" && ! grep -q "^items used" "$T/out" || fail "--no-validate"

# --- length distributions --------------------------------------------------
# lengths DIST LO HI [EXTRA...]: generated lengths lie in [LO, HI] and both
# ends are reached (1000 users, fixed seed).
lengths() {
    dist=$1 lo=$2 hi=$3; shift 3
    if "$FS" data gen --users 1000 --items 50 --length "$dist" "$@" -o "$T/len.h5" >/dev/null 2>"$T/err" &&
        "$FS" data stats "$T/len.h5" >"$T/out" 2>"$T/err"; then
        if [ "$(val 'length min')" = "$lo" ] && [ "$(val 'length max')" = "$hi" ]; then
            pass "--length $dist $*: lengths in [$lo, $hi]"
        else
            fail "--length $dist $*: min $(val 'length min') max $(val 'length max'), want $lo, $hi"
        fi
    else
        fail "--length $dist: $(cat "$T/err")"
    fi
}
lengths fixed:5 5 5
lengths uniform:3,7 3 7
lengths lognormal:3,1.5 1 60 --max-length 60
lengths pareto:2,1.2 2 80 --max-length 80
lengths fixed:1 1 1 --zipf 0

# ids in 1..N: data check validates every id (and stats counts them)
expect_ok "$FS" data gen --users 300 --items 7 --length uniform:1,40 --zipf 2.5 -o "$T/ids.h5"
expect_ok "$FS" data check "$T/ids.h5"
expect_ok "$FS" data stats "$T/ids.h5"
[ "$(val 'items used')" = 7 ] || fail "items used: $(val 'items used'), want 7"
# item counts with few or no multipliers coprime to N (4 and 6 once hung)
for n in 1 2 3 4 6 12; do
    expect_ok "$FS" data gen --users 200 --items $n --length fixed:10 -o "$T/n$n.h5"
    expect_ok "$FS" data stats "$T/n$n.h5"
    [ "$(val 'items used')" = $n ] || fail "--items $n: items used $(val 'items used')"
done

# --- from: ------------------------------------------------------------------
"$FS" data gen --users 200 --items 50 --length pareto:1,0.9 --max-length 500 \
    -o "$T/src.h5" >/dev/null 2>&1 || fail "gen source for from:"
expect_ok "$FS" data gen --users 20000 --items 50 --length "from:$T/src.h5" -o "$T/from.h5"
"$FS" data stats "$T/src.h5" > "$T/src.txt"
"$FS" data stats "$T/from.h5" > "$T/out"
[ "$(val 'length min')" = "$(awk '/^length min/ {print $3}' "$T/src.txt")" ] &&
    [ "$(val 'length max')" = "$(awk '/^length max/ {print $3}' "$T/src.txt")" ] &&
    pass "from: keeps the extremes" || fail "from: min/max differ from the source"

# --- Zipf popularity against theory ------------------------------------------
expect_ok "$FS" data gen --users 2000 --items 1000 --length fixed:50 --zipf 1.2 --seed 3 \
    -o "$T/zipf.h5"
expect_ok "$FS" data stats "$T/zipf.h5"
share=$(awk '/^top item:/ { sub(/\)/, "", $NF); print $NF }' "$T/out")
[ "$(val 'top item')" != 1 ] && pass "most popular item is not id 1 (ranks are mapped)" ||
    fail "most popular item is id 1: popularity ranks not mapped to ids"
theory=$(awk 'BEGIN { h = 0; for (k = 1; k <= 1000; k++) h += k ^ -1.2; print 1 / h }')
if awk -v s="$share" -v t="$theory" 'BEGIN { d = s - t; if (d < 0) d = -d; exit !(d < 0.05 * t) }'; then
    pass "zipf 1.2: top item share $share, theory $theory"
else
    fail "zipf 1.2: top item share $share, theory $theory"
fi

# --- stats against numpy -----------------------------------------------------
if have_h5py; then
    expect_ok "$FS" data gen --users 3000 --items 2000 --length lognormal:3,1.2 --max-length 2000 \
        --timestamps -o "$T/np.h5"
    expect_ok "$FS" data stats "$T/np.h5"
    if "$PY" - "$T/np.h5" "$T/out" "$T/src.h5" "$T/from.h5" > "$T/py" 2>&1 <<'EOF'
import sys, h5py, numpy as np
path, out, src, frm = sys.argv[1:5]
kv = {}
for line in open(out):
    if ': ' in line and not line.startswith(' '):
        k, v = line.rstrip('\n').split(': ', 1)
        kv[k] = v.split(' ')[0]
f = h5py.File(path, 'r')
off = f['offsets'][:]
items = f['item_ids'][:]
ts = f['timestamps'][:]
L = np.sort(np.diff(off))
n = len(L)
def rank(q):  # nearest rank: sorted[ceil(q n / 100) - 1]
    return int(L[max(0, -(-q * n // 100) - 1)])
want = {
    'users': n, 'items': int(f.attrs['num_items']), 'events': len(items),
    'length min': int(L[0]), 'length p50': rank(50), 'length p90': rank(90),
    'length p99': rank(99), 'length max': int(L[-1]),
    'items used': len(np.unique(items)),
}
bad = [f'{k}: stats {kv.get(k)} numpy {v}' for k, v in want.items() if kv.get(k) != str(v)]
if abs(float(kv['length mean']) - L.mean()) > 1e-3:
    bad.append(f"mean {kv['length mean']} vs {L.mean()}")
sq = L.astype(np.float64) ** 2
k = -(-n // 100)
share = sq[-k:].sum() / sq.sum()
if abs(float(kv['sum L^2 share of longest 1%']) - share) > 1e-4:
    bad.append(f"share {kv['sum L^2 share of longest 1%']} vs {share}")
if items.min() < 1 or items.max() > int(f.attrs['num_items']):
    bad.append('item id out of range')
c = np.bincount(items)
if int(kv['top item']) != int(np.argmax(c)):
    bad.append(f"top item {kv['top item']} vs {np.argmax(c)}")
if int(kv['timestamp min']) != ts.min() or int(kv['timestamp max']) != ts.max():
    bad.append('timestamp range')
for u in range(n):
    if np.any(np.diff(ts[off[u]:off[u + 1]]) < 0):
        bad.append(f'timestamps decrease for user {u}')
        break
# from: draws lengths from the source's multiset: same support
s = h5py.File(src, 'r')['offsets'][:]
g = h5py.File(frm, 'r')['offsets'][:]
ls, lg = set(np.diff(s).tolist()) - {0}, set(np.diff(g).tolist())
if ls != lg:
    bad.append(f'from: support differs: only in source {sorted(ls - lg)[:5]}, '
               f'only in output {sorted(lg - ls)[:5]}')
print('\n'.join(bad) if bad else 'all match')
sys.exit(1 if bad else 0)
EOF
    then
        pass "stats agree with numpy; from: support matches"
    else
        fail "stats vs numpy: $(cat "$T/py")"
    fi
else
    echo "# /usr/bin/python3 with h5py not found: numpy comparisons skipped"
fi

# --- bad options -------------------------------------------------------------
O="$T/bad.h5"
expect_error "--length: 'garbage' is not a distribution" \
    "$FS" data gen --users 10 --items 10 --length garbage -o "$O"
no_file "$O"
expect_error "--length: unknown distribution 'normal'" \
    "$FS" data gen --users 10 --items 10 --length normal:1,2 -o "$O"
expect_error "--length: 'fixed:0': L must be a whole number" \
    "$FS" data gen --users 10 --items 10 --length fixed:0 -o "$O"
expect_error "--length: 'uniform:7,3': A must be <= B" \
    "$FS" data gen --users 10 --items 10 --length uniform:7,3 -o "$O"
expect_error "--length: 'lognormal:3' needs 2 numbers" \
    "$FS" data gen --users 10 --items 10 --length lognormal:3 -o "$O"
expect_error "--length: 'pareto:1,0': need XM > 0 and ALPHA > 0" \
    "$FS" data gen --users 10 --items 10 --length pareto:1,0 -o "$O"
expect_error "--length 'from:$T/missing.h5'" \
    "$FS" data gen --users 10 --items 10 --length "from:$T/missing.h5" -o "$O"
expect_error "--length 'fixed:20' exceeds --max-length 10" \
    "$FS" data gen --users 10 --items 10 --length fixed:20 --max-length 10 -o "$O"
no_file "$O"
expect_error "--users: 0 is out of range" \
    "$FS" data gen --users 0 --items 10 --length fixed:3 -o "$O"
expect_error "--users: 'ten' is not a whole number" \
    "$FS" data gen --users ten --items 10 --length fixed:3 -o "$O"
expect_error "--items: 0 is out of range" \
    "$FS" data gen --users 10 --items 0 --length fixed:3 -o "$O"
expect_error "--zipf: -1 is out of range" \
    "$FS" data gen --users 10 --items 10 --length fixed:3 --zipf -1 -o "$O"
no_file "$O"
expect_error "-o OUT.h5 is required" "$FS" data gen --users 10 --items 10 --length fixed:3
expect_error "--length is required" "$FS" data gen --users 10 --items 10 -o "$O"
expect_error "unknown option '--bogus'" \
    "$FS" data gen --users 10 --items 10 --length fixed:3 --bogus -o "$O"
expect_error "option '--seed' needs a value" \
    "$FS" data gen --users 10 --items 10 --length fixed:3 -o "$O" --seed
expect_error "cannot create output file" \
    "$FS" data gen --users 10 --items 10 --length fixed:3 -o "$T/no/such/dir/x.h5"
no_file "$O"
expect_error "data stats: expected one FILE.h5" "$FS" data stats
expect_error "--dim: 0 is out of range" "$FS" data stats "$T/a.h5" --dim 0
expect_error "missing.h5" "$FS" data check "$T/missing.h5"
printf 'not hdf5\n' > "$T/junk.h5"
expect_error "junk.h5 is not an HDF5 file (a text file, a CSV of ratings?): make a dataset of it with 'freescale data import" "$FS" data check "$T/junk.h5"

# --- damaged datasets through the program ----------------------------------
"$FS" data gen --users 2000 --items 500 --length fixed:100 --timestamps -o "$T/big.h5" >/dev/null
head -c $(($(stat -c %s "$T/big.h5") / 2)) "$T/big.h5" > "$T/cut.h5"
expect_error "cut.h5: not a readable HDF5 file (truncated or corrupt?)" "$FS" data check "$T/cut.h5"
expect_error "cut.h5: not a readable HDF5 file" "$FS" data stats "$T/cut.h5"
expect_error "cut.h5: not a readable HDF5 file" \
    "$FS" data gen --users 5 --items 5 --length "from:$T/cut.h5" -o "$O"
no_file "$O"
if have_h5py; then
    cp "$T/big.h5" "$T/bad.h5"
    "$PY" -c "import h5py; f = h5py.File('$T/bad.h5', 'r+'); f['item_ids'][123456] = 501; f['timestamps'][150] = 0"
    expect_error "bad.h5: /item_ids[123456] = 501, outside 1..500" "$FS" data check "$T/bad.h5"
    "$PY" -c "import h5py; f = h5py.File('$T/bad.h5', 'r+'); f['item_ids'][123456] = 7"
    expect_error "bad.h5: /timestamps[150] = 0 decreases within user 1" "$FS" data stats "$T/bad.h5"
else
    echo "note: /usr/bin/python3 with h5py not found, damaged-id checks skipped"
fi

# a full file system (a 64 KiB tmpfs, when this user may mount one): the
# errno text with the path, exit 1 (not a signal from HDF5's exit handler),
# no temporary file left
mkdir -p "$T/full"
if mount -t tmpfs -o size=64k none "$T/full" 2>/dev/null; then
    expect_error "x.h5: write to $T/full/x.h5.tmp." "$FS" data gen --users 20000 --items 200 \
        --length uniform:5,40 -o "$T/full/x.h5"
    grep -q "No space left on device" "$T/err" && pass "full disk: errno text" ||
        fail "full disk: $(head -c 300 "$T/err")"
    [ -z "$(ls -A "$T/full")" ] && pass "full disk: nothing left behind" ||
        fail "full disk: left $(ls -A "$T/full")"
    umount "$T/full"
else
    echo "note: cannot mount a tmpfs here, the full-disk check is skipped"
fi

finish
