# scripts/gpu-env.sh: sourced (POSIX sh), with GPU_ENV_PREFIX naming the
# folder a bundle (scripts/gpu-bundle.sh) was unpacked into, to run its
# programs on a GPU machine that has neither Open MPI nor HDF5:
#   mkdir -p /tmp/fs && tar xJf DIR/bundle.tar.xz -C /tmp/fs
#   GPU_ENV_PREFIX=/tmp/fs; . scripts/gpu-env.sh && mpirun -np 2 freescale train ...
# Puts PREFIX/bin first on PATH, points Open MPI and PMIx at their plugins
# and help files inside the prefix, and finds the CUDA libraries the
# programs need (PREFIX/cuda-libs: libcudart, libcublas, ...) in, first,
# /usr/local/cuda*/lib64 (and targets/*/lib), then any Python environment's
# site-packages/nvidia/*/lib (PyTorch's pip wheels: python3's own site
# folders, $VIRTUAL_ENV, $CONDA_PREFIX, /opt/*, /usr/local/lib/python3*,
# ~/.local), saying which folder it took for each, and links them (with
# the CUDA libraries beside them) into PREFIX/cuda-lib, where the programs'
# RUNPATH looks. LD_LIBRARY_PATH is left as it was: the bundle's libraries
# reach its own programs alone (their RUNPATH), not the machine's python3,
# compute-sanitizer or anything else. Returns 1 (naming the library) when
# one is not found.
gpu_env_prefix=${GPU_ENV_PREFIX:?set GPU_ENV_PREFIX to the unpacked bundle}
gpu_env_ma=x86_64-linux-gnu
PATH=$gpu_env_prefix/bin:$PATH
# Open MPI 4.1 and PMIx 4.2 read their installation folders from these
# (the build machine's paths, relocated under the prefix)
OPAL_PREFIX=$gpu_env_prefix/usr
OPAL_LIBDIR=$gpu_env_prefix/usr/lib/$gpu_env_ma/openmpi/lib
OPAL_PKGLIBDIR=$OPAL_LIBDIR/openmpi3
OPAL_PKGDATADIR=$gpu_env_prefix/usr/share/openmpi
OPAL_SYSCONFDIR=$gpu_env_prefix/etc/openmpi
OPAL_BINDIR=$gpu_env_prefix/bin
PMIX_PREFIX=$gpu_env_prefix/usr/lib/$gpu_env_ma/pmix2
PMIX_LIBDIR=$PMIX_PREFIX/lib
PMIX_PKGLIBDIR=$PMIX_PREFIX/lib/pmix
PMIX_DATADIR=$PMIX_PREFIX/share
PMIX_PKGDATADIR=$PMIX_PREFIX/share/pmix
PMIX_SYSCONFDIR=$gpu_env_prefix/etc/openmpi
# shared memory and TCP: the bundle leaves the fabric plugins out
OMPI_MCA_pml=ob1
OMPI_MCA_btl=self,vader,tcp
export PATH OPAL_PREFIX OPAL_LIBDIR OPAL_PKGLIBDIR OPAL_PKGDATADIR \
    OPAL_SYSCONFDIR OPAL_BINDIR PMIX_PREFIX PMIX_LIBDIR PMIX_PKGLIBDIR PMIX_DATADIR \
    PMIX_PKGDATADIR PMIX_SYSCONFDIR OMPI_MCA_pml OMPI_MCA_btl
# without ssh or rsh, mpirun's default launcher refuses even a one-host job
# ("plm_rsh_agent: ssh : rsh ... could not be found"): launch locally
if ! command -v ssh >/dev/null 2>&1 && ! command -v rsh >/dev/null 2>&1; then
    OMPI_MCA_plm=isolated
    export OMPI_MCA_plm
    echo "gpu-env: no ssh: mpirun starts ranks on this host only (OMPI_MCA_plm=isolated)"
fi

# the folders to search, best first, one per line
gpu_env_dirs() {
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib \
        /usr/local/cuda-*/lib64 /usr/local/cuda-*/targets/x86_64-linux/lib; do
        [ -d "$d" ] && echo "$d"
    done
    for py in $(command -v -a python3 2>/dev/null) ${VIRTUAL_ENV:+$VIRTUAL_ENV/bin/python3} \
        ${CONDA_PREFIX:+$CONDA_PREFIX/bin/python3}; do
        [ -x "$py" ] && "$py" -c 'import site, sys
for d in site.getsitepackages() + [site.getusersitepackages()]: print(d)' 2>/dev/null
    done | while read -r s; do
        for d in "$s"/nvidia/*/lib; do [ -d "$d" ] && echo "$d"; done
    done
    for d in ${VIRTUAL_ENV:+$VIRTUAL_ENV}/lib/python3*/site-packages/nvidia/*/lib \
        ${CONDA_PREFIX:+$CONDA_PREFIX}/lib/python3*/site-packages/nvidia/*/lib \
        /opt/*/lib/python3*/site-packages/nvidia/*/lib \
        /opt/*/.venv/lib/python3*/site-packages/nvidia/*/lib \
        /opt/*/venv/lib/python3*/site-packages/nvidia/*/lib \
        /usr/local/lib/python3*/*-packages/nvidia/*/lib \
        /usr/lib/python3*/*-packages/nvidia/*/lib \
        "${HOME:-/root}"/.local/lib/python3*/site-packages/nvidia/*/lib; do
        [ -d "$d" ] && echo "$d"
    done
}
gpu_env_missing=
mkdir -p "$gpu_env_prefix/cuda-lib"
for gpu_env_lib in $(cat "$gpu_env_prefix/cuda-libs" 2>/dev/null); do
    gpu_env_found=
    for gpu_env_d in $(gpu_env_dirs); do
        if [ -e "$gpu_env_d/$gpu_env_lib" ]; then
            gpu_env_found=$gpu_env_d
            break
        fi
    done
    if [ -n "$gpu_env_found" ]; then
        echo "gpu-env: $gpu_env_lib from $gpu_env_found"
        # the library and the CUDA libraries beside it (what it loads
        # itself: libcublasLt for libcublas), linked where RUNPATH looks
        for gpu_env_f in "$gpu_env_found/$gpu_env_lib" "$gpu_env_found"/libcu*.so* \
            "$gpu_env_found"/libnv*.so*; do
            [ -e "$gpu_env_f" ] && [ ! -e "$gpu_env_prefix/cuda-lib/${gpu_env_f##*/}" ] &&
                ln -s "$gpu_env_f" "$gpu_env_prefix/cuda-lib/"
        done
    else
        gpu_env_missing="$gpu_env_missing $gpu_env_lib"
    fi
done
if [ -n "$gpu_env_missing" ]; then
    echo "gpu-env: not found:$gpu_env_missing (searched /usr/local/cuda*/lib64 and the Python environments' site-packages/nvidia/*/lib)" >&2
    false
else
    true
fi
