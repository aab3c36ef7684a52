#!/bin/sh
# gpu-check: one command that checks the CUDA backend on a GPU machine and
# writes everything to one log (default gpu-check.log; argument: another):
#   - the build with --with-cuda (skipped with FREESCALE_PREBUILT=DIR: the
#     programs made by scripts/gpu-bundle.sh, for GPU machines without the
#     build's Debian packages);
#   - every CUDA test: op by op (the embedding engine's included) and whole
#     models against the CPU, 2- and 4-rank training on the shared device
#     against the CPU (staged, direct when MPI is CUDA-aware, every overlap
#     mode, every transport), item tables in device memory
#     (tests/cuda_placement.sh), the device and overlap command-line tests;
#   - bench/bench_gpu.sh (HSTU at the ML-20M configuration: tokens/s and the
#     fraction of the GEMM peak) and bench/bench_transport at 2 and 4 ranks
#     (GEMM slowdown under copy-engine and kernel copies, copy GB/s).
# Exit status: 0 when every test passed (or skipped for want of a GPU).
set -u
cd "$(dirname "$0")/.."
TOP=$(pwd)
LOG=${1:-gpu-check.log}
exec > "$LOG" 2>&1
start=$(date +%s)
echo "gpu-check: $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L || echo "nvidia-smi: not available"
if [ -n "${FREESCALE_PREBUILT:-}" ]; then
    B=$FREESCALE_PREBUILT
    export PATH="$B/bin:$PATH" LD_LIBRARY_PATH="$B/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
    FS=$B/bin/freescale TBO=$B/bin/test_backend_ops TMB=$B/bin/test_model_backends
    GEMM=$B/bin/bench_gemm TRANSPORT=$B/bin/bench_transport
    MPIRUN=$(command -v mpirun)
else
    JOBS=$(nproc)
    if [ -f Makefile ] && ! grep -q '^NVCC = ..*nvcc' Makefile; then
        make distclean >/dev/null 2>&1 || true # configured without CUDA
    fi
    if [ ! -f Makefile ]; then
        autoreconf -fi || { echo "gpu-check: autoreconf failed"; exit 1; }
        ./configure --with-cuda || { echo "gpu-check: configure --with-cuda failed"; exit 1; }
    fi
    make -j"$JOBS" all tests/test_backend_ops tests/test_model_backends bench/bench_gemm \
        bench/bench_transport > build.log 2>&1 ||
        { tail -n 40 build.log; echo "gpu-check: build failed"; exit 1; }
    if grep -E '^[^ ]+:[0-9]+:[0-9]+: warning:|\([0-9]+\): warning' build.log; then
        echo "gpu-check: the build has warnings"
    fi
    FS=$TOP/freescale TBO=$TOP/tests/test_backend_ops TMB=$TOP/tests/test_model_backends
    GEMM=$TOP/bench/bench_gemm TRANSPORT=$TOP/bench/bench_transport
    MPIRUN=$(sed -n 's/^MPIRUN = //p' Makefile)
fi
"$FS" --version
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
export FREESCALE="$FS" TOP_SRCDIR="$TOP" MPIRUN="${MPIRUN:-mpirun}"
passed=0 failed=0 skipped=0
check() { # NAME COMMAND...: 0 pass, 77 skip, else fail
    name=$1; shift
    echo "=== $name"
    timeout 300 "$@"
    rc=$?
    case $rc in
        0) passed=$((passed + 1)); echo "=== $name: PASS" ;;
        77) skipped=$((skipped + 1)); echo "=== $name: SKIP" ;;
        *) failed=$((failed + 1)); echo "=== $name: FAIL (exit $rc)" ;;
    esac
}
check test_backend_ops "$TBO"
check test_model_backends "$TMB"
check cuda_train sh tests/cuda_train.sh
check cuda_placement sh tests/cuda_placement.sh
check cli_device sh tests/cli_device.sh
check cli_overlap sh tests/cli_overlap.sh
echo "=== benchmark"
FREESCALE="$FS" BENCH_GEMM="$GEMM" PY="$(command -v python3)" sh bench/bench_gpu.sh 60
echo "=== transport benchmark"
for np in 2 4; do
    # 1: wrong values after a copy; 77: no GPU
    check "bench_transport -np $np" "$MPIRUN" -np $np "$TRANSPORT" 4096 256 1
done
echo "gpu-check: done in $(( $(date +%s) - start )) s: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
