/* mirror: one backend's buffer where another computes; see mirror.h. */
#include "backend/mirror.h"

#include <string.h>

#include "backend/stage.h"
#include "base/log.h"

void *mirror_bind(struct mirror *mr, const struct backend_ops *be,
                  const struct backend_ops *from, const void *src, size_t bytes)
{
    if (mr->be && mr->be != be) /* a mirror stays on one backend */
        mirror_free(mr);
    mr->be = be;
    mr->src = (void *)src;
    mr->alias = src && backend_same_memory(from, be);
    if (src && !mr->alias && !backend_is_host(from))
        fatal("mirror: a buffer of the %s backend cannot be mirrored on the %s backend",
              from->name, be->name);
    if (mr->alias)
        return mr->at = mr->src;
    if (bytes > mr->cap) {
        be->free(mr->dev);
        mr->cap = bytes + bytes / 4;
        mr->dev = be->alloc(mr->cap);
    }
    return mr->at = mr->dev;
}

void *mirror_at(const struct mirror *mr) { return mr->at; }

void mirror_up(const struct mirror *mr, size_t off, size_t n)
{
    if (n > 0 && mr->src && !mr->alias)
        mr->be->to_device((char *)mr->dev + off, (const char *)mr->src + off, n);
}

void mirror_up_async(const struct mirror *mr, struct stage *st, size_t off, size_t n)
{
    if (!st) /* no ring: a plain copy */
        mirror_up(mr, off, n);
    else if (n > 0 && mr->src && !mr->alias)
        stage_up(st, (char *)mr->dev + off, (const char *)mr->src + off, n);
}

void mirror_down(const struct mirror *mr, size_t off, size_t n)
{
    if (n > 0 && mr->src && !mr->alias)
        mr->be->to_host((char *)mr->src + off, (const char *)mr->dev + off, n);
}

void mirror_free(struct mirror *mr)
{
    if (mr->be)
        mr->be->free(mr->dev);
    memset(mr, 0, sizeof *mr);
}
