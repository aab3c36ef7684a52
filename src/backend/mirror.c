/* mirror: a host buffer's backend copy; see mirror.h. */
#include "backend/mirror.h"

#include <string.h>

static int aliased(const struct mirror *mr) { return mr->host && backend_is_host(mr->be); }

void *mirror_bind(struct mirror *mr, const struct backend_ops *be, const void *host,
                  size_t bytes)
{
    if (mr->be && mr->be != be) /* a mirror stays on one backend */
        mirror_free(mr);
    mr->be = be;
    mr->host = (void *)host;
    if (aliased(mr))
        return mr->at = mr->host;
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
    if (n > 0 && mr->host && !aliased(mr))
        mr->be->to_device((char *)mr->dev + off, (const char *)mr->host + off, n);
}

void mirror_down(const struct mirror *mr, size_t off, size_t n)
{
    if (n > 0 && mr->host && !aliased(mr))
        mr->be->to_host((char *)mr->host + off, (const char *)mr->dev + off, n);
}

void mirror_free(struct mirror *mr)
{
    if (mr->be)
        mr->be->free(mr->dev);
    memset(mr, 0, sizeof *mr);
}
