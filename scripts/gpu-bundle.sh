#!/bin/sh
# gpu-bundle: build the CUDA configuration of this commit and pack, into the
# folder DIR, what a bare GPU machine (no Open MPI, no HDF5, no compilers, no
# package registry; its own C library, libstdc++ and CUDA libraries) needs
# to run scripts/gpu-check.sh --quick (doc/gpu.md):
#   DIR/bundle.tar.xz  a relocatable prefix, unpacked anywhere:
#                        bin/   the programs, Open MPI's launcher (orterun,
#                               with mpirun and mpiexec as links to it) and
#                               orted
#                        lib/   every shared library they and Open MPI's
#                               plugins load, except the C library's pieces,
#                               libstdc++, libgcc_s and the CUDA libraries
#                        usr/, etc/  Open MPI's and PMIx's plugins, help
#                               files and configuration, in the build
#                               machine's layout (scripts/gpu-env.sh points
#                               Open MPI at them)
#                        cuda-libs  the CUDA libraries the programs need
#                               (sonames), which scripts/gpu-env.sh finds
#                               on the GPU machine and links into
#                               cuda-lib/ there
#                        ompi-cuda/  the second launcher, where this
#                               machine has built it (scripts/gpu-ompi.sh;
#                               FREESCALE_OMPI_CUDA=PREFIX, default the
#                               cache of that script): a CUDA-aware Open MPI
#                               of the same version (bin/orterun, orted,
#                               ompi_info, lib/ with its plugins, share/,
#                               etc/), for gpu-check.sh's
#                               device.staging=direct runs; its libmpi.so.40
#                               takes the place of lib/'s in those runs
#                      Every program and library carries its own search
#                      path (RUNPATH, set with patchelf: $ORIGIN/../lib
#                      and $ORIGIN/../cuda-lib for the programs, the
#                      folder itself and lib/ for libraries and plugins),
#                      so the bundle's libraries reach its own programs
#                      only: no LD_LIBRARY_PATH, nothing shadowed for the
#                      GPU machine's python3 or compute-sanitizer
#   DIR/ref/           the CPU reference runs of the check and their
#                      dataset (gpu-check.sh --refs), computed here
# It refuses (exit 1, naming them) when the closure is incomplete: a
# library that ldd cannot find for a program or plugin, or one found only
# outside the bundle that is not the C library's, libstdc++, libgcc_s or
# CUDA's; and when DIR exceeds 40 MiB (it travels with the working tree).
#   scripts/gpu-bundle.sh DIR
# On the GPU machine, from a copy of this tree with DIR beside it:
#   FREESCALE_BUNDLE=DIR scripts/gpu-check.sh --quick OUT
# Rehearsed on a bare root file system: scripts/gpu-rehearse.sh.
set -eu
DIR=$(realpath -m "${1:?usage: scripts/gpu-bundle.sh DIR}")
TOP=$(cd "$(dirname "$0")/.." && pwd)
MAX_MIB=40
if ! command -v patchelf >/dev/null; then # Debian's package, as root
    [ "$(id -u)" -eq 0 ] && echo "gpu-bundle: installing patchelf" &&
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends patchelf >/dev/null
    command -v patchelf >/dev/null ||
        { echo "gpu-bundle: patchelf not found (apt-get install patchelf)" >&2; exit 1; }
fi
OMPI_VERSION=$(dpkg-query -W -f '${Version}' libopenmpi3 2>/dev/null || true)
OMPI_CUDA=${FREESCALE_OMPI_CUDA:-/var/cache/freescale/ompi-cuda-${OMPI_VERSION%+b[0-9]*}}
[ -f "$OMPI_CUDA/.freescale-ompi" ] || OMPI_CUDA=
W=$(mktemp -d "${TMPDIR:-/tmp}/gpu-bundle.XXXXXX")
trap 'rm -rf "$W"' EXIT
git -C "$TOP" rev-parse --is-inside-work-tree >/dev/null
# the committed tree, unless FREESCALE_BUNDLE_DIRTY=1 (the working tree's
# tracked and untracked-not-ignored files, as the GPU machine receives them)
if [ "${FREESCALE_BUNDLE_DIRTY:-0}" = 1 ]; then
    mkdir -p "$W/src"
    (cd "$TOP" && git ls-files -co --exclude-standard -z | xargs -0 tar cf - 2>/dev/null) |
        tar xf - -C "$W/src"
else
    git clone -q "$TOP" "$W/src"
fi
PROGS="freescale tests/test_backend_ops tests/test_model_backends tests/test_emb_ipc bench/bench_gemm
    bench/bench_transport"
(cd "$W/src" && autoreconf -fi && ./configure -q --with-cuda && make -j"$(nproc)" $PROGS) \
    > "$W/build.log" 2>&1 || { tail -n 30 "$W/build.log"; exit 1; }
if grep -E '^[^ ]+:[0-9]+:[0-9]+: warning:|\([0-9]+\): warning' "$W/build.log"; then
    echo "gpu-bundle: the build has warnings (above)"
    exit 1
fi
R=$W/root
MA=x86_64-linux-gnu
mkdir -p "$R/bin" "$R/lib"
for p in $PROGS; do
    cp "$W/src/$p" "$R/bin/"
done
# Open MPI's launcher as a real file (Debian's mpirun and mpiexec are links
# through /etc/alternatives, which the GPU machine does not have)
cp /usr/bin/orterun /usr/bin/orted "$R/bin/"
ln -s orterun "$R/bin/mpirun"
ln -s orterun "$R/bin/mpiexec"
# Open MPI's and PMIx's plugins, help files and configuration, in their
# build-machine paths below the prefix; headers and static libraries left out
for d in /usr/lib/$MA/openmpi/lib /usr/lib/$MA/pmix2/lib /usr/lib/$MA/pmix2/share \
    /usr/share/openmpi /etc/openmpi; do
    mkdir -p "$R$(dirname "$d")"
    cp -a "$d" "$R$(dirname "$d")/"
done
# the second launcher: the CUDA-aware Open MPI's runtime, in its own layout
if [ -n "$OMPI_CUDA" ]; then
    mkdir -p "$R/ompi-cuda/bin" "$R/ompi-cuda/share"
    cp "$OMPI_CUDA/bin/orterun" "$OMPI_CUDA/bin/orted" "$OMPI_CUDA/bin/ompi_info" "$R/ompi-cuda/bin/"
    cp -a "$OMPI_CUDA/lib" "$OMPI_CUDA/etc" "$R/ompi-cuda/"
    cp -a "$OMPI_CUDA/share/openmpi" "$R/ompi-cuda/share/"
    rm -f "$R/ompi-cuda/lib"/libmpi_mpifh* "$R/ompi-cuda/lib"/libmpi_usempi* "$R/ompi-cuda/lib"/liboshmem*
fi
find "$R/usr" "$R/ompi-cuda" \( -name '*.a' -o -name '*.la' -o -name pkgconfig -o -name '*.mod' \) \
    -prune -exec rm -rf {} + 2>/dev/null || true
# the fabric plugins (UCX, OFI, PSM, verbs): one GPU host needs shared
# memory and TCP; they would bring 10 MB of network libraries
for f in "$R/usr/lib/$MA/openmpi/lib/openmpi3"/*.so; do
    if ldd "$f" 2>/dev/null | grep -Eq 'libuc[pst]|libfabric|libpsm|libibverbs|librdmacm|libefa'; then
        rm -f "$f"
    fi
done
rm -f "$R/usr/lib/$MA/openmpi/lib"/libmca_common_ucx* "$R/usr/lib/$MA/openmpi/lib"/libmca_common_ofi* \
    "$R/usr/lib/$MA/openmpi/lib"/libmca_common_verbs*
# what the GPU machine must have itself: the C library's pieces, the C++
# and GCC runtime, CUDA's libraries and the driver
SYSTEM='^(linux-vdso\.so|ld-linux[-a-z0-9_]*\.so|libc|libm|libmvec|libdl|libpthread|librt|libresolv|libnss_[a-z]*|libanl|libutil|libcrypt|libBrokenLocale|libstdc\+\+|libgcc_s|libcuda|libcudart|libcublas|libcublasLt|libnvidia-[a-z-]*)\.so'
# runpath F: F's RUNPATH: the folders it loads from, relative to itself
# ($ORIGIN): lib/ (and ompi-cuda/lib first for the second launcher's
# files), the folder itself for a library, cuda-lib/ for the programs
runpath() {
    d=$(dirname "$1")
    rp=
    case $1 in "$R/ompi-cuda/"*) rp="\$ORIGIN/$(realpath -m --relative-to="$d" "$R/ompi-cuda/lib"):" ;; esac
    case $1 in *.so*) rp="$rp\$ORIGIN:" ;; esac
    rp="$rp\$ORIGIN/$(realpath -m --relative-to="$d" "$R/lib")"
    case $1 in "$R/bin/"* | "$R/ompi-cuda/bin/"*) rp="$rp:\$ORIGIN/$(realpath -m --relative-to="$d" "$R/cuda-lib")" ;; esac
    rp=$(echo "$rp" | sed 's#/\./#/#g; s#/\.:#:#g; s#/\.$##' | tr ':' '\n' | awk '!seen[$0]++' | paste -sd:)
    patchelf --set-rpath "$rp" "$1"
}
elf() { [ "$(head -c 4 "$1" | od -An -c | tr -d ' ')" = "177ELF" ]; }
find "$R/bin" "$R/usr" "$R/ompi-cuda" -type f \( -perm -u+x -o -name '*.so*' \) 2>/dev/null |
    while read -r f; do elf "$f" && echo "$f"; done > "$W/objs"
while read -r f; do runpath "$f"; done < "$W/objs"
# the libraries of the objects, copied into lib/ (with their RUNPATH) until
# nothing new comes; what resolves inside the bundle already is there
: > "$W/have"
while :; do
    while read -r f; do ldd "$f" 2>/dev/null; done < "$W/objs" |
        awk '$2 == "=>" && $3 ~ /^\// { print $1, $3 }' | sort -u > "$W/deps"
    new=0
    while read -r name path; do
        echo "$name" | grep -Eq "$SYSTEM" && continue
        case $path in "$R"/*) continue ;; esac
        grep -qx "$name" "$W/have" && continue
        cp -L "$path" "$R/lib/$name"
        chmod u+w "$R/lib/$name"
        runpath "$R/lib/$name"
        echo "$name" >> "$W/have"
        echo "$R/lib/$name" >> "$W/objs"
        new=1
    done < "$W/deps"
    [ $new = 0 ] && break
    sort -u -o "$W/objs" "$W/objs"
done
# the closure, checked as the GPU machine will see it: without any
# LD_LIBRARY_PATH, every library resolves inside the bundle (through the
# RUNPATHs) or is one of the system's
: > "$W/bad"
while read -r f; do
    ldd "$f" 2>/dev/null | awk -v f="${f#"$R"/}" '
        /not found/ { print f ": " $1 " not found"; next }
        $2 == "=>" && $3 ~ /^\// { print f ": " $1 " " $3 }' |
        while read -r obj name path; do
            [ "$path" = "not" ] && { echo "$obj $name not found"; continue; }
            case $path in "$R"/*) continue ;; esac
            echo "$name" | grep -Eq "$SYSTEM" || echo "$obj $name only at $path (outside the bundle)"
        done
done < "$W/objs" >> "$W/bad"
if [ -s "$W/bad" ]; then
    echo "gpu-bundle: refused: the closure is incomplete:"
    sort -u "$W/bad" | head -n 40
    exit 1
fi
# the CUDA libraries the programs need, for scripts/gpu-env.sh
for p in $PROGS; do
    readelf -d "$R/bin/$(basename "$p")" | sed -n 's/.*NEEDED.*\[\(libcu[a-zA-Z]*\.so[.0-9]*\)\].*/\1/p'
done | sort -u > "$R/cuda-libs"
rm -rf "$DIR"
mkdir -p "$DIR/ref"
tar cJf "$DIR/bundle.tar.xz" -C "$R" .
# the CPU references, with the programs just built
FREESCALE_PREBUILT="$R" sh "$TOP/scripts/gpu-check.sh" --refs "$DIR/ref" >/dev/null
kib=$(du -sk "$DIR" | cut -f1)
if [ "$kib" -gt $((MAX_MIB * 1024)) ]; then
    echo "gpu-bundle: refused: $DIR is $((kib / 1024)) MiB (at most $MAX_MIB: it travels with the working tree)"
    exit 1
fi
echo "gpu-bundle: $DIR: $((kib / 1024)).$((kib % 1024 * 10 / 1024)) MiB: bundle.tar.xz ($(ls "$R/bin" | tr '\n' ' '); $(ls "$R/lib" | wc -l) libraries; needs $(tr '\n' ' ' < "$R/cuda-libs")from the GPU machine), ref/ ($(ls "$DIR/ref" | wc -l) files)"
