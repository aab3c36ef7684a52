/* backend: the registry of backends; the only place that knows which are
 * compiled in. */
#include "backend.h"

#include <string.h>

#include "log.h"

const struct backend_ops *backend_get(const char *name, char *err, size_t errlen)
{
    if (!strcmp(name, "cpu"))
        return &backend_cpu;
    errorf(err, errlen, "backend '%s' is not available in this build (available: cpu)", name);
    return NULL;
}
