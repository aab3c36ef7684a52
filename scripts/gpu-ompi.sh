#!/bin/sh
# gpu-ompi: a CUDA-aware Open MPI for the GPU bundle (doc/gpu.md, "CUDA-aware
# MPI in the bundle"), built here from Debian's own source package of the
# Open MPI this machine has (4.1.4-3: the same version, Debian's patches
# applied; the tarball's generated build system kept: see below),
# configured as Debian configures it less the fabrics, Fortran, Java and
# the batch systems, plus --with-cuda. Cached outside the working
# tree, like the rehearsal's root file system:
#   scripts/gpu-ompi.sh [PREFIX]
# PREFIX (default $FREESCALE_OMPI_CUDA, else /var/cache/freescale/ompi-cuda-
# VERSION) receives the installation (its paths are compiled in; the
# bundle relocates it with OPAL_PREFIX); PREFIX/.freescale-ompi marks it
# complete, and a second run with it present only says so. As root (apt-get
# source needs a deb-src line: the script adds one for the suite of
# /etc/os-release when apt has none). The build is niced (nice -n 19,
# make -j${FREESCALE_OMPI_JOBS:-2}): configure 10 to 25 minutes and
# about 2350 compilations on 2 cores shared with other work (hours at
# nice 19 under a load of 8 or more); stopped, a second run resumes it.
# CUDA: the toolkit's headers at ${CUDA_HOME:-/usr/local/cuda}; no GPU and no
# driver are needed to build (Open MPI opens libcuda.so.1 when it runs).
set -eu
VERSION=$(dpkg-query -W -f '${Version}' libopenmpi3 2>/dev/null || true)
[ -n "$VERSION" ] || { echo "gpu-ompi: Debian's libopenmpi3 is not installed" >&2; exit 1; }
VERSION=${VERSION%+b[0-9]*} # a binary rebuild (+b1) has its source's version
UPSTREAM=${VERSION%-*}
UPSTREAM=${UPSTREAM#*:}
PREFIX=${1:-${FREESCALE_OMPI_CUDA:-/var/cache/freescale/ompi-cuda-$VERSION}}
CUDA=${CUDA_HOME:-/usr/local/cuda}
if [ -f "$PREFIX/.freescale-ompi" ]; then
    echo "gpu-ompi: $PREFIX has it ($(cat "$PREFIX/.freescale-ompi"))"
    exit 0
fi
[ "$(id -u)" -eq 0 ] || { echo "gpu-ompi: needs root (apt-get source, build dependencies)" >&2; exit 1; }
[ -f "$CUDA/include/cuda.h" ] || { echo "gpu-ompi: $CUDA/include/cuda.h not found (CUDA_HOME)" >&2; exit 1; }
SRC=$(dirname "$PREFIX")/src
mkdir -p "$SRC"
T0=$(date +%s)

# --- the source package -------------------------------------------------------------
if [ ! -f "$SRC/openmpi_$VERSION.dsc" ]; then
    if ! grep -rqs '^Types: deb-src\|^deb-src' /etc/apt/sources.list /etc/apt/sources.list.d; then
        . /etc/os-release
        echo "gpu-ompi: adding a deb-src line for $VERSION_CODENAME"
        printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
            "$VERSION_CODENAME" > /etc/apt/sources.list.d/freescale-src.sources
        apt-get update -qq
    fi
    (cd "$SRC" && apt-get source --download-only -qq "openmpi=$VERSION" -o APT::Sandbox::User=root) ||
        { echo "gpu-ompi: apt-get source openmpi=$VERSION failed" >&2; exit 1; }
fi
# the build dependencies this configuration uses
need=
for p in libevent-dev libpmix-dev libhwloc-dev zlib1g-dev pkg-config flex; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || need="$need $p"
done
if [ -n "$need" ]; then
    echo "gpu-ompi: installing$need"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $need > /dev/null
fi
B=$SRC/openmpi-$UPSTREAM
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo x86_64-linux-gnu)
CONFIG="--prefix=$PREFIX --with-cuda=$CUDA --disable-wrapper-runpath --enable-ipv6
    --with-pmix=/usr/lib/$MA/pmix2 --with-libevent=external --with-hwloc=external
    --without-ucx --without-verbs --without-libfabric --without-ofi --without-psm --without-psm2
    --without-tm --without-slurm --without-sge --without-lsf
    --disable-mpi-fortran --disable-mpi-java --disable-oshmem --disable-mpi-cxx"
CONFIG=$(echo $CONFIG)
# a tree configured so before (B/.freescale-configured holds the line) is
# built on where it stopped: the configure step alone takes 10 to 25
# minutes on 2 shared cores
if [ "$(cat "$B/.freescale-configured" 2>/dev/null)" = "$CONFIG" ]; then
    echo "gpu-ompi: resuming the build in $B"
else
    rm -rf "$B"
    (cd "$SRC" && dpkg-source -x "openmpi_$VERSION.dsc" "openmpi-$UPSTREAM") > "$SRC/unpack.log" 2>&1 ||
        { tail -n 20 "$SRC/unpack.log"; exit 1; }
    # Debian's rules regenerate the build system (./autogen.pl --force, with
    # the autotools of its time) after the patches; here the tarball's
    # generated files are kept instead: the patches that touch the build
    # system's inputs (libdir.patch: the plugin folder's name openmpi3;
    # hppa.patch: the hppa atomics; fix-underlinking.patch: the OFI plugin,
    # not built; verbose-ompi-rules.patch: man page rules) do nothing for
    # this configuration, and the inputs get the tarball's time so that make
    # does not ask for automake 1.15
    (
        cd "$B"
        grep -h '^+++ ' $(grep -v '^#' debian/patches/series | sed 's#^#debian/patches/#') |
            awk '{print $2}' | sed 's#^[^/]*/##' |
            grep -E '(^|/)(configure\.ac|Makefile\.am|Makefile\.ompi-rules|[^/]*\.m4)$' |
            while read -r f; do touch -r NEWS "$f"; done
    )
    echo "gpu-ompi: configuring Open MPI $VERSION with CUDA for $PREFIX (log: $SRC/build.log)"
    # shellcheck disable=SC2086
    (cd "$B" && ./configure $CONFIG --with-package-string="Debian OpenMPI (freescale, CUDA)") \
        > "$SRC/build.log" 2>&1 || { tail -n 30 "$SRC/build.log"; exit 1; }
    echo "$CONFIG" > "$B/.freescale-configured"
fi

# --- build and install -----------------------------------------------------------------
echo "gpu-ompi: building into $PREFIX (log: $SRC/build.log)"
rm -rf "$PREFIX"
(cd "$B" && nice -n 19 make -j"${FREESCALE_OMPI_JOBS:-2}" && make install) >> "$SRC/build.log" 2>&1 ||
    { tail -n 30 "$SRC/build.log"; exit 1; }
# the MCA parameters file as Debian's: none needed; check it is CUDA-aware
"$PREFIX/bin/ompi_info" --parsable --all 2>/dev/null |
    grep -q 'mpi_built_with_cuda_support:value:true' ||
    { echo "gpu-ompi: the build is not CUDA-aware (ompi_info)" >&2; exit 1; }
echo "Open MPI $VERSION, --with-cuda=$CUDA, built $(date -u +%F) in $(( $(date +%s) - T0 )) s" \
    > "$PREFIX/.freescale-ompi"
echo "gpu-ompi: $PREFIX ($(du -sh "$PREFIX" | cut -f1)): $(cat "$PREFIX/.freescale-ompi")"
