/* mpitest: minimal assertion helpers for tests that run on several ranks.
 * A failed check prints rank, file and line and ends the whole job through
 * fatal() (MPI_Abort), so no rank is left waiting. */
#ifndef FS_MPITEST_H
#define FS_MPITEST_H

#include <stdio.h>

#include "base/log.h"

#define T_CHECK(cond, ...)                                                               \
    do {                                                                                 \
        if (!(cond)) {                                                                   \
            char t_msg_[2048];                                                            \
            snprintf(t_msg_, sizeof t_msg_, __VA_ARGS__);                                \
            fatal("%s:%d: check failed: %s: %s", __FILE__, __LINE__, #cond, t_msg_);     \
        }                                                                                \
    } while (0)

#endif
