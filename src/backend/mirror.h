/* mirror: the backend's copy of a host buffer, for code that runs on any
 * backend without a branch per buffer. On a host backend the mirror IS the
 * host buffer: nothing is allocated and mirror_up / mirror_down do nothing.
 * On a device backend it is a device allocation, grown as needed and kept
 * across calls (device allocations synchronise), and mirror_up /
 * mirror_down copy byte ranges between the two. A mirror bound to no host
 * buffer is a backend scratch buffer. */
#ifndef FS_BACKEND_MIRROR_H
#define FS_BACKEND_MIRROR_H

#include <stddef.h>

#include "backend/backend.h"

struct mirror {
    const struct backend_ops *be;
    void *host;  /* the host buffer bound, or NULL */
    void *dev;   /* the device allocation (device backends and scratch buffers) */
    size_t cap;  /* its bytes */
    void *at;    /* the buffer the backend computes on: host or dev */
};

/* Bind mr to host[bytes] (NULL: scratch of `bytes`) and return the buffer
 * the backend computes on; its contents are those of host only where
 * mirror_up copied them (always, on a host backend). */
void *mirror_bind(struct mirror *mr, const struct backend_ops *be, const void *host,
                  size_t bytes);
/* The buffer the last mirror_bind returned. */
void *mirror_at(const struct mirror *mr);
/* Copy bytes [off, off + n) host -> backend, or backend -> host. */
void mirror_up(const struct mirror *mr, size_t off, size_t n);
void mirror_down(const struct mirror *mr, size_t off, size_t n);
void mirror_free(struct mirror *mr);

#endif
