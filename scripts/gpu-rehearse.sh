#!/bin/sh
# gpu-rehearse: the lent GPU's one run, rehearsed on this machine (as root):
# scripts/gpu-check.sh --quick with the bundle, on a bare root file system
# of a newer Debian than the build machine's, the fake device standing in
# for the GPU (doc/gpu.md, "Rehearsing the GPU run").
#
#   scripts/gpu-rehearse.sh [--reuse] [--drop PATH]... [OUT]
#
# 1. The root file system (once, cached in $FREESCALE_REHEARSE_ROOT, default
#    /var/cache/freescale/rehearse-SUITE): debootstrap --variant=minbase of
#    FREESCALE_REHEARSE_SUITE (default trixie) with python3, as the GPU host
#    has it, and nothing else: no MPI, no HDF5, no compiler, no xz (checked;
#    the check unpacks the bundle with Python's tarfile then). The CUDA runtime and cuBLAS of /usr/local/cuda are placed
#    where the GPU host has them: a Python environment's
#    site-packages/nvidia/cu13/lib (/opt/torch/.venv, its python3 first on
#    PATH), not in a system folder.
# 2. The bundle: scripts/gpu-bundle.sh gpu-bundle (this working tree, as the
#    GPU machine receives it; --reuse keeps an existing gpu-bundle/).
#    --drop PATH removes PATH (relative to the bundle's prefix, e.g.
#    bin/orterun or lib/libhdf5_openmpi.so.103) from the copy rehearsed: the
#    check must then fail.
# 3. The working tree's files and the bundle copied in, and, in a private
#    mount namespace (proc, sys, dev, a fresh /tmp and /dev/shm), chrooted:
#      GPU_CHECK_DEVICE=fake FREESCALE_BUNDLE=gpu-bundle \
#          scripts/gpu-check.sh --quick /rehearse/out
#    with the deadline and sizes of this 2-core machine (GPU_CHECK_SECONDS,
#    GPU_CHECK_ML_STEPS, GPU_CHECK_HEAVY_ITEMS, GPU_CHECK_FAIL and
#    GPU_CHECK_STAGES may be set).
# OUT (default rehearse-out/) receives the check's files. Exit status: the
# check's.
set -eu
TOP=$(cd "$(dirname "$0")/.." && pwd)
REUSE=0 DROP= OUT=$TOP/rehearse-out
while [ $# -gt 0 ]; do
    case $1 in
        --reuse) REUSE=1 ;;
        --drop) DROP="$DROP ${2:?--drop needs a path}"; shift ;;
        -*) echo "usage: scripts/gpu-rehearse.sh [--reuse] [--drop PATH]... [OUT]" >&2; exit 2 ;;
        *) OUT=$1 ;;
    esac
    shift
done
[ "$(id -u)" -eq 0 ] || { echo "gpu-rehearse: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
SUITE=${FREESCALE_REHEARSE_SUITE:-trixie}
MIRROR=${FREESCALE_REHEARSE_MIRROR:-http://deb.debian.org/debian}
ROOT=${FREESCALE_REHEARSE_ROOT:-/var/cache/freescale/rehearse-$SUITE}
CUDA_LIB=${CUDA_HOME:-/usr/local/cuda}/lib64
T0=$(date +%s)

# --- 1. the root file system -------------------------------------------------------------
if [ ! -f "$ROOT/.freescale-rehearse" ]; then
    command -v debootstrap >/dev/null || {
        echo "gpu-rehearse: installing debootstrap"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
    }
    rm -rf "$ROOT.new"
    mkdir -p "$(dirname "$ROOT")"
    echo "gpu-rehearse: debootstrap --variant=minbase $SUITE into $ROOT (once)"
    debootstrap --variant=minbase --include=python3 "$SUITE" "$ROOT.new" "$MIRROR" \
        > "$ROOT.log" 2>&1 || { tail -n 20 "$ROOT.log"; exit 1; }
    for p in mpirun orterun mpiexec h5dump gcc cc nvcc xz; do
        if chroot "$ROOT.new" sh -c "command -v $p" >/dev/null 2>&1; then
            echo "gpu-rehearse: the root file system has $p: not a bare host" >&2
            exit 1
        fi
    done
    # a Python environment like the GPU host's, holding CUDA's libraries
    py=$(basename "$(ls "$ROOT.new"/usr/bin/python3.* | grep -E 'python3\.[0-9]+$' | head -n 1)")
    venv=$ROOT.new/opt/torch/.venv
    mkdir -p "$venv/bin" "$venv/lib/$py/site-packages/nvidia/cu13/lib"
    ln -s "/usr/bin/$py" "$venv/bin/python3"
    printf 'home = /usr/bin\ninclude-system-site-packages = false\n' > "$venv/pyvenv.cfg"
    for l in libcudart.so.13 libcublas.so.13 libcublasLt.so.13; do
        [ -e "$CUDA_LIB/$l" ] || { echo "gpu-rehearse: $CUDA_LIB/$l not found" >&2; exit 1; }
        cp -L "$CUDA_LIB/$l" "$venv/lib/$py/site-packages/nvidia/cu13/lib/"
    done
    touch "$ROOT.new/.freescale-rehearse"
    rm -rf "$ROOT"
    mv "$ROOT.new" "$ROOT"
fi
echo "gpu-rehearse: root file system $ROOT ($(chroot "$ROOT" sh -c '. /etc/os-release; echo "$PRETTY_NAME"'), glibc $(chroot "$ROOT" ldd --version | head -n 1 | awk '{print $NF}'))"

# --- 2. the bundle ------------------------------------------------------------------------
if [ $REUSE = 0 ] || [ ! -f "$TOP/gpu-bundle/bundle.tar.xz" ]; then
    FREESCALE_BUNDLE_DIRTY=1 sh "$TOP/scripts/gpu-bundle.sh" "$TOP/gpu-bundle"
fi

# --- 3. the run ---------------------------------------------------------------------------
R=$ROOT/rehearse
rm -rf "$R"
mkdir -p "$R/tree" "$R/out"
(cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - 2>/dev/null) |
    tar xf - -C "$R/tree"
cp -a "$TOP/gpu-bundle" "$R/tree/gpu-bundle"
if [ -n "$DROP" ]; then
    mkdir "$R/unpacked"
    tar xJf "$R/tree/gpu-bundle/bundle.tar.xz" -C "$R/unpacked"
    for d in $DROP; do
        [ -e "$R/unpacked/$d" ] || [ -L "$R/unpacked/$d" ] ||
            { echo "gpu-rehearse: --drop $d: not in the bundle" >&2; exit 2; }
        rm -rf "${R:?}/unpacked/$d"
        echo "gpu-rehearse: dropped $d from the bundle"
    done
    tar cJf "$R/tree/gpu-bundle/bundle.tar.xz" -C "$R/unpacked" .
    rm -rf "$R/unpacked"
fi
echo "gpu-rehearse: gpu-check.sh --quick on the fake device (set up in $(( $(date +%s) - T0 )) s)"
set +e
unshare --mount --pid --fork sh -s "$ROOT" <<'EOF'
set -e
R=$1
mount --make-rprivate /
mount -t proc proc "$R/proc"
mount --rbind /sys "$R/sys"
mount --rbind /dev "$R/dev"
mount -t tmpfs tmpfs "$R/dev/shm"
mount -t tmpfs tmpfs "$R/tmp"
exec chroot "$R" /usr/bin/env -i HOME=/root TERM=dumb \
    PATH=/opt/torch/.venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    GPU_CHECK_DEVICE=fake FREESCALE_BUNDLE=gpu-bundle \
    GPU_CHECK_SECONDS=${GPU_CHECK_SECONDS:-1440} GPU_CHECK_ML_STEPS=${GPU_CHECK_ML_STEPS:-6} \
    GPU_CHECK_HEAVY_ITEMS=${GPU_CHECK_HEAVY_ITEMS:-200000} ${GPU_CHECK_FAIL:+GPU_CHECK_FAIL=$GPU_CHECK_FAIL} \
    ${GPU_CHECK_STAGES:+"GPU_CHECK_STAGES=$GPU_CHECK_STAGES"} \
    sh -c 'cd /rehearse/tree && scripts/gpu-check.sh --quick /rehearse/out'
EOF
rc=$?
set -e
rm -rf "$OUT"
mkdir -p "$OUT"
cp "$R/out"/* "$OUT/" 2>/dev/null || true
took=$(sed -n 's/^gpu-check: .* in \([0-9]*\) s.*/\1/p' "$OUT/table.txt" 2>/dev/null | tail -n 1)
echo "gpu-rehearse: the check took ${took:-?} s of its deadline of ${GPU_CHECK_SECONDS:-1440} s (this machine's for the GPU's 480 s)"
echo "gpu-rehearse: exit $rc after $(( $(date +%s) - T0 )) s; $(ls "$OUT" | wc -l) file(s) in $OUT: $(ls "$OUT" | tr '\n' ' ')"
exit $rc
