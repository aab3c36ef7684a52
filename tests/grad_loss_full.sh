#!/bin/sh
# grad_loss_full.sh: the full softmax over the sharded table
# (src/model/loss_full.c) on 1, 2 and 4 ranks and with embedding_group = 2,
# each against a double-precision reference (tests/test_loss_full) and
# PyTorch's cross-entropy over the whole table (tests/torch_loss_full.py);
# the losses of the rank counts agree to 1e-5. Exit 77 (skip) without
# mpirun; the PyTorch part is skipped (after the C checks) without PyTorch.
. "$(dirname "$0")/lib.sh"
need_mpirun
PROG="$(dirname "$FS")/tests/test_loss_full"
for run in "1 0" "2 0" "4 0" "4 2" "3 0"; do
    set -- $run
    if timeout 300 "$MPIRUN" -np "$1" "$PROG" "$T/f$1-$2.bin" "$2" > "$T/out" 2>&1; then
        pass "test_loss_full P=$1 G=$2"
    else
        fail "test_loss_full P=$1 G=$2: $(cat "$T/out")"
    fi
    cat "$T/out"
done
# the losses of every rank count against P = 1 (the 'loss N' of each line)
for f in 2-0 4-0 4-2 3-0; do
    python_cmp=$("$PY" - "$T/f1-0.bin" "$T/f$f.bin" <<'PYEOF'
import struct, sys
def losses(path):
    out, data, at = {}, open(path, "rb").read(), 0
    while at < len(data):
        n = data[at]; name = data[at + 1:at + 1 + n].decode(); at += 1 + n
        t = data[at:at + 1]; (cnt,) = struct.unpack_from("<q", data, at + 1); at += 9
        sz = (4 if t == b"f" else 8) * cnt
        if name.endswith("tau_scale_loss"):
            out[name] = struct.unpack_from("<3d", data, at)[2]
        at += sz
    return out
a, b = losses(sys.argv[1]), losses(sys.argv[2])
print(max(abs(a[k] - b[k]) / abs(a[k]) for k in a) if a.keys() == b.keys() else "keys")
PYEOF
)
    if [ "$python_cmp" != keys ] && awk -v w="$python_cmp" 'BEGIN { exit !(w <= 1e-5) }'; then
        pass "losses P,G=$f vs P=1 agree (worst $python_cmp)"
    else
        fail "losses P,G=$f vs P=1: $python_cmp"
    fi
done
if "$PY" -c 'import torch' 2>/dev/null; then
    "$PY" "$(dirname "$0")/torch_loss_full.py" "$T"/f*.bin || fail "torch oracle"
else
    echo "skip: PyTorch not importable by $PY"
    [ "$failures" -eq 0 ] && exit 77
fi
finish
