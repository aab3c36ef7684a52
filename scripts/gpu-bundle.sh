#!/bin/sh
# gpu-bundle: build the CUDA configuration of this commit and pack, into the
# folder DIR, what a GPU machine WITHOUT the build's Debian packages needs to
# run scripts/gpu-check.sh --quick (doc/gpu.md):
#   DIR/bundle.tar.xz  the programs (/opt/freescale/bin), the shared libraries
#                      they and Open MPI load (/opt/freescale/lib) and Open MPI
#                      itself (launcher, plugins, PMIx, help files), to unpack
#                      at /; the C library, libstdc++ and the CUDA libraries
#                      are left out (the GPU machine has its own)
#   DIR/ref/           the CPU reference runs of the check's placement stage
#                      and their dataset (gpu-check.sh --refs), computed here
# It refuses (exit 1, naming them) when ldd finds a library missing for a
# program or an Open MPI plugin: such a bundle would fail on the GPU machine.
#   scripts/gpu-bundle.sh DIR
# On the GPU machine, from a copy of this tree (DIR carried along):
#   tar xJf DIR/bundle.tar.xz -C / &&
#   FREESCALE_PREBUILT=/opt/freescale FREESCALE_REFS=DIR/ref scripts/gpu-check.sh --quick OUT
set -eu
DIR=$(realpath -m "${1:?usage: scripts/gpu-bundle.sh DIR}")
TOP=$(cd "$(dirname "$0")/.." && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
trap 'rm -rf "$W"' EXIT
git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null
git clone -q "$TOP" "$W/src"
PROGS="freescale tests/test_backend_ops tests/test_model_backends tests/test_emb_ipc bench/bench_gemm
    bench/bench_transport"
(cd "$W/src" && autoreconf -fi && ./configure -q --with-cuda && make -j"$(nproc)" $PROGS) \
    > "$W/build.log" 2>&1 || { tail -n 30 "$W/build.log"; exit 1; }
if grep -E '^[^ ]+:[0-9]+:[0-9]+: warning:|\([0-9]+\): warning' "$W/build.log"; then
    echo "gpu-bundle: the build has warnings (above)"
    exit 1
fi
R=$W/root
mkdir -p "$R/opt/freescale/bin" "$R/opt/freescale/lib"
for p in $PROGS; do
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
# the shared libraries of the programs and of every Open MPI plugin; none may be missing
find "$R/opt/freescale/bin" "$R/usr" -type f \( -perm -u+x -o -name '*.so*' \) > "$W/objs"
: > "$W/missing"
while read -r f; do
    ldd "$f" 2>/dev/null | awk -v f="$f" '/not found/ { print f ": " $1 }' >> "$W/missing"
done < "$W/objs"
if [ -s "$W/missing" ]; then
    echo "gpu-bundle: refused: ldd finds libraries missing:"
    sed "s|$R||" "$W/missing"
    exit 1
fi
skip='linux-vdso|ld-linux|/libc\.so|/libm\.so|/libdl\.so|/libpthread\.so|/librt\.so|libstdc\+\+|libgcc_s|libcuda|libcublas|libcudart|libnvidia'
while read -r f; do ldd "$f" 2>/dev/null; done < "$W/objs" | awk '$3 ~ /^\// { print $3 }' |
    sort -u | grep -Ev "$skip" | while read -r lib; do cp -L "$lib" "$R/opt/freescale/lib/"; done
mkdir -p "$DIR/ref"
tar cJf "$DIR/bundle.tar.xz" -C "$R" .
# the CPU references, with the programs just built
FREESCALE_PREBUILT="$R/opt/freescale" sh "$TOP/scripts/gpu-check.sh" --refs "$DIR/ref" >/dev/null
echo "gpu-bundle: $DIR: bundle.tar.xz ($(du -h "$DIR/bundle.tar.xz" | cut -f1); $(ls "$R/opt/freescale/bin" | tr '\n' ' ')), ref/ ($(ls "$DIR/ref" | wc -l) files)"
