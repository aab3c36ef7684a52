/* stage: uploads of host data to a backend's memory that do not make the
 * host wait (doc/gpu.md). stage_up copies the host bytes into a pinned
 * ring and enqueues the copy to the device on the comm stream; the compute
 * stream's next work waits for it, the host does not, and the host bytes
 * may be reused at once. The ring's segments are reused once the copies
 * out of them have completed (an event per segment: a host wait only when
 * a segment comes round before its copies ran); it grows to the largest
 * upload. On a host backend stage_up is a memcpy. */
#ifndef FS_STAGE_H
#define FS_STAGE_H

#include <stddef.h>

#include "backend/backend.h"

struct stage;

struct stage *stage_new(const struct backend_ops *be);
void stage_free(struct stage *s);
/* dst[bytes] (backend memory) = src[bytes] (host memory), before the
 * compute stream's next operation. */
void stage_up(struct stage *s, void *dst, const void *src, size_t bytes);

#endif
