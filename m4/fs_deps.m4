# freescale dependency checks. Each names the Debian package to install
# when the dependency is missing.

# FS_HDF5: the parallel (Open MPI) build of HDF5 through pkg-config, as
# Debian's libhdf5-openmpi-dev installs it: checkpoints and the outputs of
# recommend and export are written by every rank through MPI-IO. The serial
# tools (data import, gen, stats) use the same library with the default
# file driver. Not the plain 'hdf5' module: it names whichever build
# update-alternatives chose last.
AC_DEFUN([FS_HDF5], [
  PKG_CHECK_MODULES([HDF5], [hdf5-openmpi], [],
    [AC_MSG_ERROR([the parallel HDF5 (pkg-config hdf5-openmpi) was not found: install libhdf5-openmpi-dev])])
  fs_save_CPPFLAGS=$CPPFLAGS
  CPPFLAGS="$CPPFLAGS $HDF5_CFLAGS"
  AC_MSG_CHECKING([whether HDF5 was built with MPI-IO (H5_HAVE_PARALLEL)])
  AC_COMPILE_IFELSE([AC_LANG_PROGRAM([[#include <hdf5.h>
#ifndef H5_HAVE_PARALLEL
#error serial HDF5
#endif]], [[hid_t p = H5Pcreate(H5P_FILE_ACCESS); (void)p;]])],
    [AC_MSG_RESULT([yes])],
    [AC_MSG_RESULT([no])
     AC_MSG_ERROR([the HDF5 that pkg-config hdf5-openmpi names is not the parallel build: install libhdf5-openmpi-dev])])
  CPPFLAGS=$fs_save_CPPFLAGS
])

# FS_INIH: the inih INI parser.
AC_DEFUN([FS_INIH], [
  PKG_CHECK_MODULES([INIH], [inih], [],
    [AC_MSG_ERROR([inih not found by pkg-config: install libinih-dev])])
])

# FS_CSV: libcsv (RFC 4180 CSV parser) for 'data import --format csv'.
AC_DEFUN([FS_CSV], [
  AC_CHECK_HEADER([csv.h], [], [AC_MSG_ERROR([csv.h not found: install libcsv-dev])])
  AC_CHECK_LIB([csv], [csv_parse], [CSV_LIBS=-lcsv],
    [AC_MSG_ERROR([libcsv not found: install libcsv-dev])])
  AC_SUBST([CSV_LIBS])
])

# FS_BLAS: OpenBLAS (pthread build). On the CPUs we measured, OpenBLAS with
# its SkylakeX kernels is the fastest sgemm available as a Debian package
# (bench/bench_blas prints the comparison); src/blas.c selects the kernel set
# at start-up because OpenBLAS 0.3.21 misdetects recent CPUs.
AC_DEFUN([FS_BLAS], [
  PKG_CHECK_MODULES([BLAS], [openblas], [BLAS_NAME=OpenBLAS],
    [AC_MSG_ERROR([OpenBLAS not found by pkg-config: install libopenblas-dev])])
  fs_save_CFLAGS=$CFLAGS; fs_save_LIBS=$LIBS
  CFLAGS="$CFLAGS $BLAS_CFLAGS"; LIBS="$BLAS_LIBS $LIBS"
  AC_CHECK_HEADER([cblas.h], [], [AC_MSG_ERROR([cblas.h not found: install libopenblas-dev])])
  AC_CHECK_FUNC([openblas_get_corename], [],
    [AC_MSG_ERROR([the BLAS found is not OpenBLAS (no openblas_get_corename): install libopenblas-dev])])
  CFLAGS=$fs_save_CFLAGS; LIBS=$fs_save_LIBS
  AC_SUBST([BLAS_NAME])
])

# FS_CMOCKA: unit-test framework, optional. Without it the unit tests are
# reported as skipped, never as passed.
AC_DEFUN([FS_CMOCKA], [
  PKG_CHECK_MODULES([CMOCKA], [cmocka], [have_cmocka=yes], [have_cmocka=no])
  AM_CONDITIONAL([HAVE_CMOCKA], [test "x$have_cmocka" = xyes])
])

# FS_CUDA: --with-cuda[=DIR] (default DIR /usr/local/cuda; nvcc need not be
# on PATH) and --with-cuda-arch=LIST (default "80 90": SASS for sm_80 and
# sm_90 plus PTX of the highest for newer GPUs). Defines HAVE_CUDA, NVCC,
# NVCC_ARCH_FLAGS, CUDA_CFLAGS and CUDA_LIBS (cuBLAS and the runtime; never
# the -lcuda driver stub: the runtime loads the driver itself).
AC_DEFUN([FS_CUDA], [
  AC_ARG_WITH([cuda],
    [AS_HELP_STRING([--with-cuda@<:@=DIR@:>@],
      [build the CUDA backend with the toolkit in DIR (default /usr/local/cuda)])],
    [], [with_cuda=no])
  AC_ARG_WITH([cuda-arch],
    [AS_HELP_STRING([--with-cuda-arch=LIST],
      [compute capabilities to build SASS for, e.g. "80 90" (default); PTX of the last is added])],
    [], [with_cuda_arch="80 90"])
  have_cuda=no
  AS_IF([test "x$with_cuda" != xno], [
    AS_IF([test "x$with_cuda" = xyes], [CUDA_DIR=/usr/local/cuda], [CUDA_DIR=$with_cuda])
    NVCC=$CUDA_DIR/bin/nvcc
    AC_MSG_CHECKING([for nvcc in $CUDA_DIR])
    AS_IF([test -x "$NVCC"], [AC_MSG_RESULT([$NVCC])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([--with-cuda: $NVCC not found: install the CUDA toolkit or pass --with-cuda=DIR])])
    NVCC_ARCH_FLAGS=
    fs_last=
    for fs_a in $with_cuda_arch; do
      AS_IF([echo "$fs_a" | grep -Eq '^@<:@1-9@:>@@<:@0-9@:>@+a?$'], [],
        [AC_MSG_ERROR([--with-cuda-arch: '$fs_a' is not a compute capability like 80 or 90])])
      NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$fs_a,code=sm_$fs_a"
      fs_last=$fs_a
    done
    AS_IF([test -z "$fs_last"], [AC_MSG_ERROR([--with-cuda-arch: empty list])])
    NVCC_ARCH_FLAGS="$NVCC_ARCH_FLAGS -gencode arch=compute_$fs_last,code=compute_$fs_last"
    CUDA_LIBDIR=$CUDA_DIR/lib64
    AS_IF([test -d "$CUDA_LIBDIR"], [], [CUDA_LIBDIR=$CUDA_DIR/lib])
    CUDA_CFLAGS="-I$CUDA_DIR/include"
    CUDA_LIBS="-L$CUDA_LIBDIR -Wl,-rpath,$CUDA_LIBDIR -lcublas -lcudart -lstdc++"
    AC_MSG_CHECKING([whether nvcc compiles for $with_cuda_arch])
    cat > conftest.cu <<_FS_EOF
__global__ void k(float *x) { x@<:@threadIdx.x@:>@ = 1.0f; }
int main(void) { k<<<1, 1>>>(0); return 0; }
_FS_EOF
    AS_IF([$NVCC $NVCC_ARCH_FLAGS -c conftest.cu -o conftest.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([$NVCC cannot compile for compute capabilities "$with_cuda_arch" (see config.log)])])
    rm -f conftest.cu conftest.$OBJEXT
    fs_save_CFLAGS=$CFLAGS; fs_save_LIBS=$LIBS
    CFLAGS="$CFLAGS $CUDA_CFLAGS"; LIBS="$CUDA_LIBS $LIBS"
    AC_CHECK_HEADER([cublas_v2.h], [],
      [AC_MSG_ERROR([cublas_v2.h not found under $CUDA_DIR/include])])
    AC_MSG_CHECKING([for cublasCreate_v2 and cudaGetDeviceCount])
    AC_LINK_IFELSE([AC_LANG_PROGRAM([[#include <cublas_v2.h>]],
        [[cublasHandle_t h; int n; cublasCreate(&h); cudaGetDeviceCount(&n);]])],
      [AC_MSG_RESULT([yes])],
      [AC_MSG_RESULT([no])
       AC_MSG_ERROR([cannot link cuBLAS and the CUDA runtime from $CUDA_LIBDIR (see config.log)])])
    CFLAGS=$fs_save_CFLAGS; LIBS=$fs_save_LIBS
    have_cuda=yes
    AC_DEFINE([HAVE_CUDA], [1], [Define when the CUDA backend is built.])
  ])
  AM_CONDITIONAL([HAVE_CUDA], [test "x$have_cuda" = xyes])
  AC_SUBST([NVCC])
  AC_SUBST([NVCC_ARCH_FLAGS])
  AC_SUBST([CUDA_CFLAGS])
  AC_SUBST([CUDA_LIBS])
])
