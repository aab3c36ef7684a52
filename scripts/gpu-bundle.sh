#!/bin/sh
# gpu-bundle: build the CUDA configuration from this commit and pack what a
# GPU machine WITHOUT the build's Debian packages needs to run
# scripts/gpu-check.sh: the programs, and the shared libraries they and
# Open MPI load (Open MPI with its plugins, launcher and help files, HDF5,
# OpenBLAS, inih, libcsv, ...). The C library, libstdc++ and the CUDA
# libraries are left out: the GPU machine has its own.
#   scripts/gpu-bundle.sh OUT.tar.xz
# On the GPU machine, from a copy of this tree:
#   tar xJf OUT.tar.xz -C / && FREESCALE_PREBUILT=/opt/freescale scripts/gpu-check.sh
set -eu
OUT=$(realpath -m "${1:?usage: scripts/gpu-bundle.sh OUT.tar.xz}")
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
trap 'rm -rf "$W"' EXIT
git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null
git clone -q "$TOP" "$W/src"
(cd "$W/src" && autoreconf -fi && ./configure -q --with-cuda &&
    make -j"$(nproc)" all tests/test_backend_ops tests/test_model_backends bench/bench_gemm \
        bench/bench_transport) > "$W/build.log" 2>&1 || { tail -n 30 "$W/build.log"; exit 1; }
R=$W/root
mkdir -p "$R/opt/freescale/bin" "$R/opt/freescale/lib"
for p in freescale tests/test_backend_ops tests/test_model_backends bench/bench_gemm \
    bench/bench_transport; do
    cp "$W/src/$p" "$R/opt/freescale/bin/"
done
# Open MPI: launcher, plugins, PMIx, help files, configuration
for f in /usr/bin/mpirun /usr/bin/mpiexec /usr/bin/orterun /usr/bin/orted; do
    [ -e "$f" ] && mkdir -p "$R/usr/bin" && cp -P "$f" "$R/usr/bin/"
done
for d in /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2 \
    /usr/share/openmpi /usr/share/pmix /etc/openmpi; do
    [ -d "$d" ] && mkdir -p "$R$(dirname "$d")" && cp -a "$d" "$R$(dirname "$d")/"
done
# the shared libraries of the programs and of every Open MPI plugin
skip='linux-vdso|ld-linux|/libc\.so|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|libstdc\+\+|libgcc_s|libcuda|libcublas|libcudart|libnvidia'
find "$R/opt/freescale/bin" "$R/usr" -type f \( -perm -u+x -o -name '*.so*' \) |
    while read -r f; do ldd "$f" 2>/dev/null; done | awk '$3 ~ /^\// { print $3 }' | sort -u |
    grep -Ev "$skip" | while read -r lib; do cp -L "$lib" "$R/opt/freescale/lib/"; done
tar cJf "$OUT" -C "$R" .
echo "gpu-bundle: $OUT ($(du -h "$OUT" | cut -f1)): $(ls "$R/opt/freescale/bin" | tr '\n' ' ')"
