/* backend: the registry of backends; the only place that knows which are
 * compiled in. */
#include "config.h"

#include "backend/backend.h"

#include <stdlib.h>
#include <string.h>

#include "base/check.h"
#include "base/log.h"

#ifdef HAVE_CUDA
#define BACKEND_NAMES "cpu, fake, cuda"
#else
#define BACKEND_NAMES "cpu, fake"
#endif

const char *backend_names(void) { return BACKEND_NAMES; }

const struct backend_ops *backend_get(const char *name, char *err, size_t errlen)
{
    if (!strcmp(name, "cpu"))
        return &backend_cpu;
    if (!strcmp(name, "fake"))
        return &backend_fake;
#ifdef HAVE_CUDA
    if (!strcmp(name, "cuda"))
        return &backend_cuda;
#endif
    errorf(err, errlen, "backend '%s' is not available in this build (available: %s)", name,
           BACKEND_NAMES);
    return NULL;
}

int backend_is_host(const struct backend_ops *be) { return be->device_open == NULL; }

int backend_has_ipc(const struct backend_ops *be)
{
    return be->ipc_export && be->ipc_open && be->ipc_close && be->peer_copy && be->comm_add;
}

const void *backend_upload(const struct backend_ops *be, const void *host, size_t bytes,
                           void **owned)
{
    *owned = NULL;
    if (backend_is_host(be))
        return host;
    *owned = be->alloc(bytes ? bytes : 1);
    be->to_device(*owned, host, bytes);
    return *owned;
}

void *backend_host_begin(const struct backend_ops *be, void *p, size_t bytes, int read)
{
    if (backend_is_host(be))
        return p;
    void *h = xmalloc(bytes ? bytes : 1);
    if (read)
        be->to_host(h, p, bytes);
    return h;
}

void backend_host_end(const struct backend_ops *be, void *p, void *host, size_t bytes, int write)
{
    if (host == p)
        return;
    if (write)
        be->to_device(p, host, bytes);
    free(host);
}

int backend_same_memory(const struct backend_ops *a, const struct backend_ops *b)
{
    return a == b || (backend_is_host(a) && backend_is_host(b));
}

const void *backend_download(const struct backend_ops *be, const void *src, size_t bytes,
                             void **owned)
{
    *owned = NULL;
    if (backend_is_host(be))
        return src;
    *owned = xmalloc(bytes ? bytes : 1);
    be->to_host(*owned, src, bytes);
    return *owned;
}
