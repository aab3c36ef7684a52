/* mirror: a buffer of one backend's memory as another backend computes on
 * it, for code that runs on any pair of backends without a branch per
 * buffer (the training step: the model's backend, the table's). When both
 * share memory (the same backend, or two host backends) the mirror IS the
 * buffer: nothing is allocated and mirror_up / mirror_down do nothing.
 * Otherwise (host buffer, device computing) it is a device allocation,
 * grown as needed and kept across calls, and mirror_up / mirror_down copy
 * byte ranges between the two. A mirror bound to no buffer is a scratch
 * buffer of the computing backend. */
#ifndef FS_BACKEND_MIRROR_H
#define FS_BACKEND_MIRROR_H

#include <stddef.h>

#include "backend/backend.h"

struct mirror {
    const struct backend_ops *be; /* computes */
    void *src;   /* the buffer bound (host memory when copied), or NULL */
    void *dev;   /* be's allocation (copies and scratch buffers) */
    size_t cap;  /* its bytes */
    void *at;    /* the buffer be computes on: src or dev */
    int alias;   /* at == src */
};

/* Bind mr to src[bytes] of backend `from`'s memory (NULL: a scratch of
 * `bytes`) and return the buffer be computes on; its contents are src's
 * only where mirror_up copied them (always, when they share memory). */
void *mirror_bind(struct mirror *mr, const struct backend_ops *be,
                  const struct backend_ops *from, const void *src, size_t bytes);
/* The buffer the last mirror_bind returned. */
void *mirror_at(const struct mirror *mr);
/* Copy bytes [off, off + n) src -> be, or be -> src. */
void mirror_up(const struct mirror *mr, size_t off, size_t n);
void mirror_down(const struct mirror *mr, size_t off, size_t n);
/* mirror_up through the pinned ring st (stage.h): enqueued before the
 * compute stream's next operation, no host wait; src may change at once.
 * For a buffer uploaded once before the operations that read it (a
 * step's inputs): a second upload may land before those ran. st NULL:
 * mirror_up. */
struct stage;
void mirror_up_async(const struct mirror *mr, struct stage *st, size_t off, size_t n);
void mirror_free(struct mirror *mr);

#endif
