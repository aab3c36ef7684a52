/* blas: choice of the BLAS kernel set, and its description for the banner.
 *
 * OpenBLAS picks its kernels when the library loads, from OPENBLAS_CORETYPE
 * or its own CPU detection; 0.3.21 misdetects recent CPUs (SSE3 kernels on
 * Emerald Rapids; an environment may also force Haswell). blas_select()
 * runs first thing in main(): when the kernels loaded are not the ones
 * chosen for this CPU it sets OPENBLAS_CORETYPE and re-executes the program
 * (same PID, same arguments), before MPI starts.
 *
 * FREESCALE_BLAS_CORETYPE=NAME forces a kernel set, =keep keeps whatever
 * OpenBLAS chose from the environment. */
#ifndef FS_BLAS_H
#define FS_BLAS_H

#include <stddef.h>

void blas_select(char **argv);
/* Its two halves, for a caller that re-executes for other reasons too
 * (main.c): set the environment and return 1 when the program must be
 * re-executed to load other kernels; and, when that exec failed, note it. */
int blas_env_prepare(void);
void blas_env_reexec_failed(void);
/* The kernel set this CPU should use ("SkylakeX", "Haswell", or NULL). */
const char *blas_preferred_coretype(void);
/* e.g. "OpenBLAS 0.3.21 (pthread), kernels SkylakeX (chosen for this CPU)" */
void blas_describe(char *buf, size_t len);
const char *blas_corename(void);
/* Threads per rank, for BLAS and the OpenMP loops: OPENBLAS_NUM_THREADS
 * when set; else, for a rank bound to a subset of the cores (mpirun binds
 * to one core per rank by default at 1 or 2 ranks), the cores it is bound
 * to; else the node's online cores divided by the ranks on the node (at
 * least 1), so that ranks do not oversubscribe the cores. Returns the
 * number set. */
int blas_set_threads(int ranks_on_node);

#endif
