#!/usr/bin/env bash
# scripts/test.sh: one command from a fresh clone to a tested build.
# Installs the Debian packages it needs (non-interactive, idempotent), then
# runs autoreconf, configure, make and make check. Extra arguments go to
# configure. Exit status: that of make check.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
    autoconf automake libtool pkg-config make gcc
    libopenmpi-dev openmpi-bin
    libhdf5-dev hdf5-tools
    libinih-dev libcsv-dev libopenblas-dev libcmocka-dev
    python3 python3-numpy python3-h5py
)

missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "scripts/test.sh: installing ${missing[*]}"
    SUDO=
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || {
            echo "scripts/test.sh: need root (or sudo) to install: ${missing[*]}" >&2
            exit 1
        }
        SUDO=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

autoreconf -fi
./configure "$@"
make -j2
make -j2 check
