#!/bin/sh
# cli_h5py: datasets written by h5py the way a Python user writes them are
# read: h5py's defaults (a variable-length UTF-8 string attribute, NumPy
# int32 arrays) go through 'data stats', 'data check' and 'train', with the
# same losses as the int64 file of the same data; string attributes of
# every kind and integers of every width, sign and byte order are accepted;
# floats, wrong ranks and shapes, arrays where a scalar belongs and values
# that do not fit are refused, naming the file, the dataset and the index.
# Files freescale writes are read by h5py with str attributes.
. "$(dirname "$0")/lib.sh"
have_h5py || { echo "SKIP: no h5py for $PY"; exit 77; }
need_mpirun

# mk OUT.h5 [NAME=PYTHON-EXPR ...]: a valid dataset of 64 users and 200 items
# written with h5py's defaults and int32 arrays; each NAME=EXPR replaces
# (EXPR = None: deletes) the attribute NAME (a.NAME) or the dataset NAME.
mk() { "$PY" - "$@" <<'EOF'
import sys, h5py, numpy as np
out, edits = sys.argv[1], sys.argv[2:]
rng = np.random.default_rng(7)
lens = rng.integers(5, 41, size=64)
off = np.concatenate([[0], np.cumsum(lens)])
items = rng.integers(1, 201, size=off[-1])
ts = np.concatenate([np.sort(rng.integers(0, 10**6, size=l)) for l in lens])
attrs = {"format": "freescale-seq", "version": 1, "num_items": 200, "num_users": 64}
data = {"offsets": off.astype(np.int32), "item_ids": items.astype(np.int32),
        "timestamps": ts.astype(np.int32), "actions": (items % 5).astype(np.int32)}
for e in edits:
    name, expr = e.split("=", 1)
    v = eval(expr)
    target, key = (attrs, name[2:]) if name.startswith("a.") else (data, name)
    if v is None:
        del target[key]
    else:
        target[key] = v
with h5py.File(out, "w") as f:
    for k, v in attrs.items():
        if isinstance(v, tuple):      # (value, h5py datatype)
            f.attrs.create(k, v[0], dtype=v[1])
        else:
            f.attrs[k] = v
    for k, v in data.items():
        f[k] = v
EOF
}
read_ok() { # read_ok NAME FILE: stats and check accept FILE
    if "$FS" data stats "$2" > "$T/stats" 2> "$T/err" && "$FS" data check "$2" > /dev/null 2>> "$T/err" &&
        grep -q "^users: 64$" "$T/stats" && grep -q "^items: 200$" "$T/stats"; then
        pass "read: $1"
    else
        fail "$1 not read: $(head -c 400 "$T/err")"
    fi
}
refused() { # refused MESSAGE [NAME=EXPR ...]: a file with these edits is refused
    msg=$1; shift
    mk "$T/bad.h5" "$@" || { fail "mk $*"; return; }
    expect_error "$T/bad.h5: $msg" "$FS" data check "$T/bad.h5"
}

# --- h5py's defaults: stats, check, train; losses equal to the int64 file ---
mk "$T/py32.h5"
"$PY" -c 'import sys, h5py; f = h5py.File(sys.argv[1], "r")
a = f.attrs["format"]; t = f.attrs.get_id("format").get_type()
assert isinstance(a, str) and t.is_variable_str() and t.get_cset() == h5py.h5t.CSET_UTF8
assert f["item_ids"].dtype == "int32" and f["offsets"].dtype == "int32"' "$T/py32.h5" ||
    fail "the h5py file does not have h5py's defaults (vlen UTF-8 attribute, int32)"
read_ok "h5py defaults (vlen UTF-8 attribute, int32 arrays)" "$T/py32.h5"
grep -q "^events: $("$PY" -c 'import sys, h5py; print(h5py.File(sys.argv[1])["item_ids"].size)' \
    "$T/py32.h5")$" "$T/stats" || fail "stats events: $(cat "$T/stats")"
mk "$T/py64.h5" 'offsets=data["offsets"].astype(np.int64)' \
    'item_ids=data["item_ids"].astype(np.int64)' 'timestamps=data["timestamps"].astype(np.int64)'
IN=$TOP_SRCDIR/input/tiny.in
train() { timeout 300 "$MPIRUN" -np 1 "$FS" train "$IN" data.path="$1" train.max_steps=2 \
    train.log_every=1 model.dropout=0 output.metrics="$2"; }
expect_ok train "$T/py32.h5" "$T/m32.jsonl"
expect_ok train "$T/py64.h5" "$T/m64.jsonl"
same_losses "$T/m64.jsonl" "$T/m32.jsonl" "int32 file from h5py vs int64" 0 0

# --- string attributes of every kind ------------------------------------------
FIX='h5py.string_dtype("ascii", 13)'
read_ok "vlen ASCII" "$(mk "$T/s1.h5" 'a.format=("freescale-seq", h5py.string_dtype("ascii"))' &&
    echo "$T/s1.h5")"
read_ok "fixed ASCII" "$(mk "$T/s2.h5" "a.format=(b'freescale-seq', $FIX)" && echo "$T/s2.h5")"
read_ok "fixed UTF-8 (null-padded, 20 bytes)" "$(mk "$T/s3.h5" \
    'a.format=("freescale-seq".encode(), h5py.string_dtype("utf-8", 20))' && echo "$T/s3.h5")"
read_ok "numpy bytes (fixed)" "$(mk "$T/s4.h5" 'a.format=np.bytes_(b"freescale-seq")' &&
    echo "$T/s4.h5")"
SP='(lambda t: (t.set_size(16), t.set_strpad(h5py.h5t.STR_SPACEPAD), h5py.Datatype(t))[2])(h5py.h5t.C_S1.copy())'
read_ok "fixed, space-padded" "$(mk "$T/s5.h5" "a.format=(b'freescale-seq   ', $SP)" &&
    echo "$T/s5.h5")"

# --- integers of every width, sign and byte order -------------------------------
for t in i1 u1 i2 u2 i4 u4 i8 u8 '>i4' '>u8'; do
    case $t in i1|u1) it=u2;; *) it=$t;; esac # items up to 200, offsets up to ~1400
    mk "$T/w.h5" "item_ids=data['item_ids'].astype('$it')" \
        "offsets=data['offsets'].astype('$(case $t in i1|u1) echo i2;; *) echo "$t";; esac)')" \
        "timestamps=data['timestamps'].astype('$(case $t in i1|u1|i2|u2) echo u4;; *) echo "$t";; esac)')" \
        "actions=data['actions'].astype('$t')" "a.num_items=np.$(case $t in *u*) echo uint16;; *) echo int16;; esac)(200)" \
        || fail "mk $t"
    read_ok "integers $t" "$T/w.h5"
done
mk "$T/maps.h5" 'item_map=np.arange(200, dtype=np.uint32) * 3' \
    'item_map_str=["i%dé" % i for i in range(200)]' 'user_map_str=np.array([b"u%d" % i for i in range(64)])'
read_ok "int and string maps (vlen and fixed)" "$T/maps.h5"

# the reader's maps equal h5py's: vlen UTF-8, fixed ASCII, fixed UTF-8, int
# maps of other widths, and the maps freescale writes (UTF-8, and bytes
# that are not UTF-8 stored as ASCII-labelled bytes)
PM=$(dirname "$FS")/tests/print_maps
[ -x "$PM" ] || { fail "$PM not built ('make check' builds it)"; finish; }
same_maps() { # same_maps FILE: print_maps and h5py print the same lines
    "$PM" "$1" > "$T/maps.c" 2> "$T/err" || { fail "print_maps $1: $(cat "$T/err")"; return; }
    "$PY" - "$1" > "$T/maps.py" <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
out = sys.stdout.buffer
for name in ("item_map", "user_map", "item_map_str", "user_map_str"):
    if name in f:
        for i, v in enumerate(f[name][:]):
            out.write(b"%s %d %s\n" % (name.encode(), i, v if isinstance(v, bytes) else b"%d" % v))
EOF
    if [ -s "$T/maps.c" ] && cmp -s "$T/maps.c" "$T/maps.py"; then pass "maps of $(basename "$1") as h5py reads them"
    else fail "maps of $1 differ: $(diff "$T/maps.c" "$T/maps.py" | head -5)"; fi
}
same_maps "$T/maps.h5"
mk "$T/maps2.h5" 'user_map=np.arange(64, dtype=">i2") - 30' \
    'item_map_str=np.array([("é%d" % i).encode() for i in range(200)], dtype=h5py.string_dtype("utf-8", 8))'
same_maps "$T/maps2.h5"
printf 'A2,0000013714,5,2\nA1,0000013714,4,1\nZo\303\253,x,1,1\n' > "$T/u8.csv"
"$FS" data import --format csv --no-header --string-ids "$T/u8.csv" -o "$T/u8.h5" > /dev/null ||
    fail "import u8.csv"
same_maps "$T/u8.h5"
printf 'caf\351,x,1,1\nA1,y,1,1\n' > "$T/latin1.csv"
"$FS" data import --format csv --no-header --string-ids "$T/latin1.csv" -o "$T/latin1.h5" \
    > /dev/null || fail "import latin1.csv"
same_maps "$T/latin1.h5"
"$PY" -c 'import sys, h5py; f = h5py.File(sys.argv[1], "r")
assert h5py.check_string_dtype(f["user_map_str"].dtype).encoding == "ascii"
assert h5py.check_string_dtype(f["item_map_str"].dtype).encoding == "utf-8"' "$T/latin1.h5" &&
    pass "ids that are not UTF-8 are not labelled UTF-8" || fail "latin1.h5: wrong character sets"

# --- refused, naming the file, the dataset and the first bad index ---------------
refused "/item_ids has type float64, expected int64 (or another integer type)" \
    'item_ids=data["item_ids"].astype(float)'
refused "/timestamps has type float32, expected int64" 'timestamps=data["timestamps"].astype("f4")'
refused "/actions has type enum (h5py bool?), expected int32" 'actions=data["actions"] > 2'
refused "/item_ids has shape [1, " 'item_ids=data["item_ids"][None, :]'
refused "/offsets has shape [65, 1], expected 1 dimension" 'offsets=data["offsets"][:, None]'
refused "/item_ids has shape scalar, expected 1 dimension" 'item_ids=np.int32(1)'
refused "/offsets has 64 elements, expected 65" 'offsets=data["offsets"][:64]'
refused "/item_ids[3] = 9223372036854775808 does not fit int64" \
    'item_ids=(lambda v: (v.__setitem__(3, 2**63), v)[1])(data["item_ids"].astype(np.uint64))'
refused "/item_ids[5] = 201, outside 1..200" \
    'item_ids=(lambda v: (v.__setitem__(5, 201), v)[1])(data["item_ids"].copy())'
refused "/actions[7] = 1099511627776 does not fit int32" \
    'actions=(lambda v: (v.__setitem__(7, 2**40), v)[1])(data["actions"].astype(np.int64))'
refused "/actions[2] = 3000000000 does not fit int32" \
    'actions=(lambda v: (v.__setitem__(2, 3 * 10**9), v)[1])(data["actions"].astype(np.uint32))'
refused "/offsets[64] = 18446744073709551615 does not fit int64" \
    'offsets=(lambda v: (v.__setitem__(64, 2**64 - 1), v)[1])(data["offsets"].astype(np.uint64))'
refused "/item_map_str has 3 elements, expected 200" 'item_map_str=["a", "b", "c"]'
refused "/user_map_str has type int64, expected strings" 'user_map_str=np.arange(64)'
refused "attribute 'num_items' has shape [1], expected a scalar" 'a.num_items=np.array([200])'
refused "attribute 'format' has shape [1], expected a scalar" 'a.format=["freescale-seq"]'
refused "attribute 'format' has shape [2], expected a scalar" 'a.format=["freescale-seq", "x"]'
refused "attribute 'format' has type int64, expected a string" 'a.format=1'
refused "attribute format = 'freescale', expected 'freescale-seq'" 'a.format="freescale"'
refused "attribute 'num_users' has type float64, expected an integer" 'a.num_users=64.0'
refused "attribute 'num_items' has type string, expected an integer" 'a.num_items="200"'
refused "attribute 'version' = 18446744073709551615 does not fit int64" 'a.version=np.uint64(2**64-1)'
refused "missing attribute 'version' on /" 'a.version=None'

# --- what freescale writes, h5py reads as str ------------------------------------
printf 'A2,0000013714,5,2\nA1,0000013714,4,1\n' > "$T/s.csv"
"$FS" data import --format csv --no-header --string-ids "$T/s.csv" -o "$T/fs.h5" > /dev/null ||
    fail "import"
if "$PY" - "$T/fs.h5" <<'EOF'
import sys, h5py
f = h5py.File(sys.argv[1], "r")
assert type(f.attrs["format"]) is str and f.attrs["format"] == "freescale-seq", repr(f.attrs["format"])
assert f.attrs["version"] == 1 and f.attrs["num_users"] == 2 and f.attrs["num_items"] == 1
assert list(f["user_map_str"].asstr()[:]) == ["A1", "A2"], f["user_map_str"][:]
assert list(f["item_map_str"].asstr()[:]) == ["0000013714"]
assert h5py.check_string_dtype(f["item_map_str"].dtype).encoding == "utf-8"
EOF
then pass "h5py reads freescale's attributes as str, the string maps as UTF-8"
else fail "h5py reads freescale's file differently"; fi

finish
