# freescale dependency checks. Each names the Debian package to install
# when the dependency is missing.

# FS_HDF5: serial HDF5 through pkg-config. libhdf5-openmpi-dev flips the
# plain 'hdf5' module to the MPI build, so ask for 'hdf5-serial' first.
AC_DEFUN([FS_HDF5], [
  PKG_CHECK_MODULES([HDF5], [hdf5-serial], [],
    [PKG_CHECK_MODULES([HDF5], [hdf5], [],
      [AC_MSG_ERROR([HDF5 not found by pkg-config (hdf5-serial or hdf5): install libhdf5-dev])])])
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
