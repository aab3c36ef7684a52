/* check: failure paths of the check macros; see check.h. */
#include "base/check.h"

#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Walk the HDF5 error stack and keep its innermost description. */
static herr_t h5_walk(unsigned n, const H5E_error2_t *e, void *data)
{
    (void)n;
    char *out = data;
    if (e->desc && e->desc[0])
        snprintf(out, 256, "%s (in %s)", e->desc, e->func_name ? e->func_name : "?");
    return 0;
}

void check_h5_failed(const char *call, const char *file, int line)
{
    char msg[256] = "no HDF5 error description";
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, h5_walk, msg);
    fatal("%s:%d: HDF5 call failed: %s: %s", file, line, call, msg);
}

void *check_xmalloc(size_t bytes, const char *what, const char *file, int line)
{
    void *p = malloc(bytes ? bytes : 1);
    if (!p)
        fatal("%s:%d: out of memory allocating %zu bytes (%s)", file, line, bytes, what);
    return p;
}

void *check_xcalloc(size_t n, size_t size, const char *what, const char *file, int line)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p)
        fatal("%s:%d: out of memory allocating %zu x %zu bytes (%s)", file, line, n, size, what);
    return p;
}

void *check_xrealloc(void *p, size_t bytes, const char *what, const char *file, int line)
{
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q)
        fatal("%s:%d: out of memory growing to %zu bytes (%s)", file, line, bytes, what);
    return q;
}

char *xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = xmalloc(n);
    memcpy(d, s, n);
    return d;
}
