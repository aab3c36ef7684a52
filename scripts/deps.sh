# scripts/deps.sh: sourced by scripts/test.sh and scripts/demo.sh. Installs
# the Debian packages freescale needs (non-interactive, idempotent: nothing
# that is already installed), as root or through sudo.
FREESCALE_PACKAGES=(
    autoconf automake libtool pkg-config make gcc
    libopenmpi-dev openmpi-bin
    libhdf5-openmpi-dev hdf5-tools
    libinih-dev libcsv-dev libjson-c-dev zlib1g-dev libopenblas-dev libcmocka-dev
    python3 python3-numpy python3-h5py python3-torch
    gnuplot-nox munge slurmctld slurmd slurm-client
)

freescale_install_deps() {
    local missing=() p
    for p in "${FREESCALE_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    echo "installing Debian packages: ${missing[*]}"
    local sudo=
    if [ "$(id -u)" -ne 0 ]; then
        command -v sudo >/dev/null || {
            echo "need root (or sudo) to install: ${missing[*]}" >&2
            return 1
        }
        sudo=sudo
    fi
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -qq
    $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
}
