#!/bin/sh
# gpu-check: one command that checks the CUDA backend on a GPU machine:
# builds with --with-cuda, runs every CUDA test (op by op and whole models
# against the CPU, 2-rank training on a shared device against the CPU, the
# device and overlap command-line tests), the GPU throughput benchmark and
# the transport benchmark (bench/bench_transport at 2 and 4 ranks sharing
# the GPU: GEMM slowdown under copy-engine and kernel copies), writing
# everything to one log (default gpu-check.log; argument: another).
# Needs the build's Debian packages (scripts/deps.sh) already installed.
# Exit status: 0 when every test passed.
set -u
cd "$(dirname "$0")/.."
LOG=${1:-gpu-check.log}
exec > "$LOG" 2>&1
start=$(date +%s)
echo "gpu-check: $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L || echo "nvidia-smi: not available"
JOBS=$(nproc)
if [ -f Makefile ] && ! grep -q '^NVCC = ..*nvcc' Makefile; then
    make distclean >/dev/null 2>&1 || true # configured without CUDA
fi
if [ ! -f Makefile ]; then
    autoreconf -fi || { echo "gpu-check: autoreconf failed"; exit 1; }
    ./configure --with-cuda || { echo "gpu-check: configure --with-cuda failed"; exit 1; }
fi
make -j"$JOBS" > build.log 2>&1 || { tail -n 40 build.log; echo "gpu-check: build failed"; exit 1; }
if grep -i 'warning' build.log; then echo "gpu-check: the build has warnings"; fi
./freescale --version
TESTS="tests/test_backend_ops tests/test_model_backends tests/cuda_train.sh tests/cli_device.sh tests/cli_overlap.sh"
make -j"$JOBS" check TESTS="$TESTS" >/dev/null 2>&1
status=$?
for t in $TESTS; do
    echo "=== $t: $(sed -n 's/^:test-result: //p' "$t.log" 2>/dev/null | head -n 1)"
    cat "$t.log" 2>/dev/null
done
echo "=== benchmark"
sh bench/bench_gpu.sh 60
echo "=== transport benchmark"
MPIRUN=$(sed -n 's/^MPIRUN = //p' Makefile)
[ "$(id -u)" -eq 0 ] && export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_rmaps_base_oversubscribe=1 OMPI_MCA_btl_vader_single_copy_mechanism=none
if make bench/bench_transport >/dev/null 2>&1; then
    for np in 2 4; do
        timeout 180 "${MPIRUN:-mpirun}" -np $np bench/bench_transport 4096 256 1
        rc=$?
        # 1: wrong values after a copy; 77: no GPU (reported above)
        [ $rc -eq 0 ] || [ $rc -eq 77 ] || { echo "gpu-check: bench_transport -np $np: exit $rc"; status=1; }
    done
else
    echo "gpu-check: cannot build bench/bench_transport"; status=1
fi
echo "gpu-check: done in $(( $(date +%s) - start )) s; tests $( [ $status -eq 0 ] && echo passed || echo FAILED)"
exit $status
