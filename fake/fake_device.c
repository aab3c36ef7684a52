/* fake_device: the fake device's management (the knobs, devices and their
 * identities), its memory and copies, events, IPC and the operations'
 * common opening of their operands; the compute operations and the ops
 * table are backend_fake.c (what the fake device is: there, fake/README).
 *
 * Knobs (environment, read when the device is first queried):
 *   FREESCALE_FAKE_GPUS   comma-separated names of the devices this
 *                         process sees (default "fake0"); processes seeing
 *                         the same name share that device (its identity)
 *   FREESCALE_FAKE_MEM    each device's memory in bytes (suffix K, M, G;
 *                         default 16G); free = that less this process's
 *                         allocations
 *   FREESCALE_FAKE_AWARE  1: act as if MPI were CUDA-aware (device
 *                         pointers go to MPI, opened to it while in flight);
 *                         default 0 (exchanges are staged)
 *   FREESCALE_FAKE_ASYNC  N >= 1: the compute stream runs in a thread of its
 *                         own, up to N operations behind the host
 *                         (fake_compute.c), and the copy stream in a thread
 *                         of its own (fake_copy.c); default 0 (operations
 *                         run at once, in the caller; copies when due)
 *   FREESCALE_FAKE_COPY_GBS  B > 0: with FREESCALE_FAKE_ASYNC, each copy of
 *                         the copy stream takes at least bytes / B GB/s (a
 *                         PCIe link's time); default 0 (a memmove's) */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/devstats.h"
#include "base/check.h"
#include "base/log.h"
#include "fake/fake.h"

#define FK_MAX_GPUS 16

static struct {
    int knobs;                      /* read */
    int ngpus;
    char names[FK_MAX_GPUS][64];
    size_t mem;
    int aware;
    int async;
    double copy_gbs;
    int open, device;
} g_fk;

static size_t parse_bytes(const char *v)
{
    char *end;
    double x = strtod(v, &end);
    double unit = 1;
    switch (toupper((unsigned char)*end)) {
    case 'K': unit = 1024.0; end++; break;
    case 'M': unit = 1024.0 * 1024; end++; break;
    case 'G': unit = 1024.0 * 1024 * 1024; end++; break;
    default: break;
    }
    if (end == v || *end != '\0' || !(x > 0))
        fatal("FREESCALE_FAKE_MEM = '%s': expected a positive number of bytes (suffix K, M, G)",
              v);
    return (size_t)(x * unit);
}

static void knobs(void)
{
    if (g_fk.knobs)
        return;
    g_fk.knobs = 1;
    const char *gpus = getenv("FREESCALE_FAKE_GPUS");
    if (!gpus)
        gpus = "fake0";
    for (const char *s = gpus; *s;) {
        size_t n = strcspn(s, ",");
        if (n == 0 || n >= sizeof g_fk.names[0] || g_fk.ngpus == FK_MAX_GPUS)
            fatal("FREESCALE_FAKE_GPUS = '%s': expected up to %d comma-separated names of 1 to "
                  "%zu characters", gpus, FK_MAX_GPUS, sizeof g_fk.names[0] - 1);
        memcpy(g_fk.names[g_fk.ngpus], s, n);
        g_fk.names[g_fk.ngpus++][n] = '\0';
        s += n + (s[n] == ',');
    }
    const char *mem = getenv("FREESCALE_FAKE_MEM");
    g_fk.mem = mem ? parse_bytes(mem) : (size_t)16 << 30;
    const char *aware = getenv("FREESCALE_FAKE_AWARE");
    if (aware && strcmp(aware, "0") != 0 && strcmp(aware, "1") != 0)
        fatal("FREESCALE_FAKE_AWARE = '%s': expected 0 or 1", aware);
    g_fk.aware = aware && !strcmp(aware, "1");
    const char *async = getenv("FREESCALE_FAKE_ASYNC");
    if (async) {
        char *end;
        long n = strtol(async, &end, 10);
        if (end == async || *end != '\0' || n < 0 || n > 1000000)
            fatal("FREESCALE_FAKE_ASYNC = '%s': expected 0 (operations run at once) or the "
                  "number of operations the compute stream may run behind the host, 1 to "
                  "1000000", async);
        g_fk.async = (int)n;
    }
    const char *gbs = getenv("FREESCALE_FAKE_COPY_GBS");
    if (gbs) {
        char *end;
        g_fk.copy_gbs = strtod(gbs, &end);
        if (end == gbs || *end != '\0' || !(g_fk.copy_gbs >= 0) || g_fk.copy_gbs > 1e6)
            fatal("FREESCALE_FAKE_COPY_GBS = '%s': expected the copy stream's GB/s (a number "
                  "> 0; 0: no limit)", gbs);
        if (g_fk.copy_gbs > 0 && !g_fk.async)
            fatal("FREESCALE_FAKE_COPY_GBS = '%s' needs FREESCALE_FAKE_ASYNC (the copy stream's "
                  "thread)", gbs);
    }
}

static void need_open(void)
{
    if (!g_fk.open)
        fatal("backend fake: no device opened");
}

/* --- one operation: its operands translated to the operations' view --------- */

void fake_op_begin(struct fk_op *o, const char *name)
{
    need_open();
    fake_tick();
    fake_compute_due(); /* what the compute stream waits for runs first */
    fake_copy_uses_drop();
    o->name = name;
}

/* a device operand (NULL: an absent optional one) */
void *fake_op_arg(struct fk_op *o, const void *p, const char *what)
{
    void *v = fake_mem_shadow(p, o->name, what);
    if (v && fake_copy_on()) /* the copy stream's thread: an unordered copy of it? */
        fake_copy_check_use(p, o->name, what);
    return v;
}


/* --- devices ---------------------------------------------------------------- */

int fk_device_count(char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    knobs();
    return g_fk.ngpus;
}

int fk_device_uuid(int device, char *buf, size_t len, char *err, size_t errlen)
{
    knobs();
    if (device < 0 || device >= g_fk.ngpus)
        return errorf(err, errlen, "fake device %d out of range (%d visible)", device,
                      g_fk.ngpus);
    snprintf(buf, len, "fake-%s", g_fk.names[device]);
    return 0;
}

int fk_device_open(int device, int tf32, char *err, size_t errlen)
{
    (void)tf32; /* the CPU's GEMMs are fp32 */
    knobs();
    if (g_fk.open)
        return device == g_fk.device ? 0
                                     : errorf(err, errlen, "device %d requested, but device %d "
                                              "is already open", device, g_fk.device);
    if (device < 0 || device >= g_fk.ngpus)
        return errorf(err, errlen, "device %d out of range: %d fake device%s visible", device,
                      g_fk.ngpus, g_fk.ngpus == 1 ? "" : "s");
    fake_mem_guard_install();
    fake_compute_async(g_fk.async);
    fake_copy_async(g_fk.async > 0, g_fk.copy_gbs);
    g_fk.open = 1;
    g_fk.device = device;
    return 0;
}

void fk_device_describe(char *buf, size_t len)
{
    char async[128] = "";
    if (g_fk.async)
        snprintf(async, sizeof async, ", a compute stream up to %d operation%s behind the host"
                 " and a copy stream of its own", g_fk.async, g_fk.async == 1 ? "" : "s");
    snprintf(buf, len, "fake device %d ('%s', %.1f GiB; a test backend: the CPU's operations "
             "behind guarded memory%s%s)", g_fk.device, g_fk.names[g_fk.device],
             (double)g_fk.mem / (1024.0 * 1024 * 1024),
             g_fk.aware ? ", MPI acting CUDA-aware" : "", async);
}

int fk_device_memory(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    knobs();
    size_t used = fake_mem_in_use();
    *total_bytes = g_fk.mem;
    *free_bytes = used < g_fk.mem ? g_fk.mem - used : 0;
    return 0;
}

int fk_mpi_direct(void)
{
    knobs();
    return g_fk.aware;
}

void fk_mpi_expose(const void *p, size_t bytes, int on)
{
    char *base;
    size_t nb;
    (void)bytes;
    if (!fake_mem_find(p, &base, &nb))
        return; /* host memory */
    if (on)
        fake_mem_open(p, "mpi_expose", "buffer");
    else
        fake_mem_close(p);
}

/* --- memory and copies ------------------------------------------------------- */

void *fk_alloc(size_t bytes)
{
    need_open();
    fake_tick();
    devstats_alloc();
    return fake_mem_alloc(bytes, __builtin_return_address(0));
}

void fk_free(void *p)
{
    if (!p)
        return;
    need_open();
    fake_tick();
    devstats_sync(); /* as cudaFree: the device is idle first */
    fake_compute_wait();
    fake_comm_drain();
    fake_mem_free(p);
}

void fake_not_device(const void *p, const char *op, const char *what)
{
    char *b;
    size_t n;
    if (fake_mem_find(p, &b, &n))
        fatal("fake device: %s: %s = %p is device memory, not host memory", op, what, p);
}

/* Synchronous copies (as the CUDA backend's: in stream order, then a host
 * wait): the stream catches up, the host copies. */
void fk_to_device(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    struct fk_op op_;
    fake_op_begin(&op_, "to_device");
    fake_not_device(src, "to_device", "source");
    void *d = fake_op_arg(&op_, dst, "dst");
    fake_compute_wait();
    memcpy(d, src, bytes);
    devstats_h2d(bytes);
    devstats_sync();
}

void fk_to_host(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    struct fk_op op_;
    fake_op_begin(&op_, "to_host");
    fake_not_device(dst, "to_host", "destination");
    const void *s = fake_op_arg(&op_, src, "src");
    fake_compute_wait();
    memcpy(dst, s, bytes);
    devstats_d2h(bytes);
    devstats_sync();
}

static void run_copy(const union fk_arg *a, const void *blob)
{
    (void)blob;
    memmove(a[0].p, a[1].p, (size_t)a[2].u);
}

static void run_zero(const union fk_arg *a, const void *blob)
{
    (void)blob;
    memset(a[0].p, 0, (size_t)a[1].u);
}

/* device to device and memset: in stream order, the host does not wait */
void fk_copy(void *dst, const void *src, size_t bytes)
{
    if (!bytes || dst == src)
        return;
    struct fk_op op_;
    fake_op_begin(&op_, "copy");
    const union fk_arg a[] = {{.p = fake_op_arg(&op_, dst, "dst")},
                              {.p = fake_op_arg(&op_, src, "src")}, {.u = bytes}};
    fake_launch(run_copy, a, 3, NULL, 0);
}

void fk_zero(void *p, size_t bytes)
{
    if (!bytes)
        return;
    struct fk_op op_;
    fake_op_begin(&op_, "zero");
    const union fk_arg a[] = {{.p = fake_op_arg(&op_, p, "p")}, {.u = bytes}};
    fake_launch(run_zero, a, 2, NULL, 0);
}

void fk_synchronize(void)
{
    need_open();
    fake_tick();
    fake_compute_due();
    fake_compute_wait();
    devstats_sync();
}

void *fk_host_alloc(size_t bytes)
{
    need_open();
    fake_tick();
    devstats_alloc();
    return fake_pinned_alloc(bytes);
}

void fk_host_free(void *p)
{
    if (!p)
        return;
    need_open();
    fake_tick();
    devstats_sync(); /* as cudaFreeHost after the comm stream */
    fake_comm_drain();
    fake_pinned_free(p);
}

static void need_pinned(const void *p, size_t bytes, const char *op)
{
    if (!fake_pinned_has(p, bytes))
        fatal("fake device: %s: the host buffer %p [%zu bytes] is not pinned memory from "
              "host_alloc", op, p, bytes);
}

static void need_device(const void *p, const char *op, const char *what)
{
    char *b;
    size_t n;
    if (!fake_mem_find(p, &b, &n))
        fatal("fake device: %s: %s = %p is not device memory", op, what, p);
}

void fk_to_host_async(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    need_open();
    fake_tick();
    need_pinned(dst, bytes, "to_host_async");
    need_device(src, "to_host_async", "source");
    fake_comm_copy(dst, src, bytes);
    devstats_d2h(bytes);
}

void fk_to_device_async(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    need_open();
    fake_tick();
    need_pinned(src, bytes, "to_device_async");
    need_device(dst, "to_device_async", "destination");
    fake_comm_copy(dst, src, bytes);
    fake_compute_after_comm();
    devstats_h2d(bytes);
}

void fk_copy_up(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    need_open();
    fake_tick();
    need_pinned(src, bytes, "copy_up");
    need_device(dst, "copy_up", "destination");
    fake_copy_copy(dst, src, bytes, 0);
    devstats_h2d(bytes);
}

void fk_copy_down(void *dst, const void *src, size_t bytes)
{
    if (!bytes)
        return;
    need_open();
    fake_tick();
    need_pinned(dst, bytes, "copy_down");
    need_device(src, "copy_down", "source");
    fake_copy_copy(dst, src, bytes, 1);
    devstats_d2h(bytes);
}

void fk_comm_sync(void)
{
    need_open();
    fake_tick();
    devstats_sync();
    fake_comm_drain();
}

int fk_ipc_export(void *p, void *handle, char *err, size_t errlen)
{
    need_open();
    fake_compute_wait(); /* the allocation's pages move to shared memory */
    fake_comm_drain();
    return fake_ipc_export(p, handle, err, errlen);
}

void *fk_ipc_open(const void *handle, char *err, size_t errlen)
{
    need_open();
    return fake_ipc_open(handle, err, errlen);
}

void fk_ipc_close(void *p)
{
    if (!p)
        return;
    need_open();
    fake_tick();
    devstats_sync(); /* after the comm stream, as the CUDA backend */
    fake_compute_wait();
    fake_comm_drain();
    fake_ipc_close(p);
}

void fk_peer_copy(void *dst, const void *src, size_t bytes, int use_kernel)
{
    (void)use_kernel;
    if (!bytes || dst == src)
        return;
    need_open();
    fake_tick();
    need_device(dst, "peer_copy", "destination");
    need_device(src, "peer_copy", "source");
    fake_comm_copy(dst, src, bytes);
}

void fk_comm_add(float *y, const float *x, int64_t n)
{
    if (n <= 0)
        return;
    need_open();
    fake_tick();
    need_device(y, "comm_add", "y");
    need_device(x, "comm_add", "x");
    fake_comm_add(y, x, n);
}

struct backend_event *fk_event_new(int timing)
{
    need_open();
    return fake_event_new(timing);
}

void fk_event_record(struct backend_event *e, enum backend_stream s)
{
    need_open();
    fake_event_record(e, s);
}

int fk_event_query(struct backend_event *e)
{
    need_open();
    return fake_event_query(e);
}

void fk_event_sync(struct backend_event *e)
{
    need_open();
    fake_event_sync(e);
}

void fk_stream_wait(enum backend_stream s, struct backend_event *e)
{
    need_open();
    fake_stream_wait(s, e);
}

