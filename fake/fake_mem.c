/* fake_mem: the fake device's memory (fake.h): guarded allocations, the
 * fault report, pinned host buffers and IPC through shared memory.
 *
 * An allocation of b bytes is a shared anonymous mapping of the pages that
 * hold b rounded up to 64 bytes, plus one guard page; the allocation ENDS
 * at the guard page (an overrun faults at once). Its address, the one host
 * code holds, is PROT_NONE for good (except while MPI transfers from or
 * into it: fake_mem_open); the operations reach the same pages through a
 * second mapping, the shadow (read-write, its own guard page after it),
 * whose addresses they alone see (fake_mem_shadow). So an operation costs
 * no system call: toggling the protection around each one (two mprotect
 * calls per operand, a TLB shootdown each) took 60% of a fake-device step.
 * Exported allocations move to a memfd (the same addresses, both
 * mappings) that a peer process opens as /proc/PID/fd/FD. */
#include "fake/fake.h"

#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/check.h"
#include "base/log.h"

struct fk_alloc {
    char *map;          /* the mapping: data pages, then the guard page */
    size_t data;        /* bytes of the data pages (what open/close toggle) */
    char *shadow;       /* the operations' mapping of the same data pages (read-write),
                         * then a guard page of its own */
    char *base;         /* the allocation: [base, base + bytes), ending at map + data */
    size_t bytes;
    int id;             /* numbered from 1, in allocation order */
    int opens;          /* nested opens (MPI): the address accessible while > 0 */
    int peer;           /* an IPC mapping of another process's allocation */
    int fd;             /* the shared memory behind an exported one, else -1 */
    const void *site;   /* who allocated it */
    int64_t use;        /* the last compute stream item using it (fake_mem_use) */
};

static struct {
    struct fk_alloc *a; /* sorted by map */
    int n, cap, next_id;
    size_t in_use;
    size_t page;
    struct pinned {
        char *p;
        size_t bytes;
    } *pin;
    int npin, cap_pin;
    struct sigaction old_segv;
    int guarded;
} g_mem;

static size_t page_size(void)
{
    if (!g_mem.page)
        g_mem.page = (size_t)sysconf(_SC_PAGESIZE);
    return g_mem.page;
}

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

/* The index of the allocation whose mapping (data pages and guard page)
 * holds p, or -1. No locking: the SIGSEGV handler calls it too. */
static int lookup(const void *p)
{
    int lo = 0, hi = g_mem.n - 1, at = -1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (g_mem.a[mid].map <= (const char *)p) {
            at = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    if (at < 0 || (const char *)p >= g_mem.a[at].map + g_mem.a[at].data + page_size())
        return -1;
    return at;
}

/* Like lookup, for an operand: p within the data pages or just past the
 * end (an empty range at the end of a buffer). */
static struct fk_alloc *operand(const void *p)
{
    int i = lookup(p);
    if (i < 0 || (const char *)p > g_mem.a[i].map + g_mem.a[i].data)
        return NULL;
    return &g_mem.a[i];
}

static void protect(struct fk_alloc *a, int prot)
{
    if (mprotect(a->map, a->data, prot) != 0)
        fatal("fake device: mprotect of allocation #%d (%zu bytes) failed: %s", a->id,
              a->bytes, strerror(errno));
}

/* A read-write second mapping of the data pages of map (a shared mapping
 * of data bytes), followed by a PROT_NONE guard page; NULL on failure. */
static char *shadow_of(char *map, size_t data)
{
    char *sh = mmap(NULL, data + page_size(), PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (sh == MAP_FAILED)
        return NULL;
    if (mremap(map, 0, data, MREMAP_MAYMOVE | MREMAP_FIXED, sh) == MAP_FAILED ||
        mprotect(sh, data, PROT_READ | PROT_WRITE) != 0) {
        munmap(sh, data + page_size());
        return NULL;
    }
    return sh;
}

static struct fk_alloc *insert(char *map, size_t data, size_t bytes, const void *site)
{
    if (g_mem.n == g_mem.cap) {
        g_mem.cap = g_mem.cap ? 2 * g_mem.cap : 64;
        g_mem.a = xrealloc(g_mem.a, (size_t)g_mem.cap * sizeof *g_mem.a);
    }
    int i = g_mem.n;
    while (i > 0 && g_mem.a[i - 1].map > map) {
        g_mem.a[i] = g_mem.a[i - 1];
        i--;
    }
    g_mem.n++;
    struct fk_alloc *a = &g_mem.a[i];
    *a = (struct fk_alloc){.map = map, .data = data, .base = map + data - bytes,
                           .bytes = bytes, .id = ++g_mem.next_id, .fd = -1, .site = site};
    return a;
}

static void drop(struct fk_alloc *a)
{
    int i = (int)(a - g_mem.a);
    memmove(&g_mem.a[i], &g_mem.a[i + 1], (size_t)(g_mem.n - i - 1) * sizeof *g_mem.a);
    g_mem.n--;
}

void *fake_mem_alloc(size_t bytes, const void *site)
{
    const size_t b = round_up(bytes ? bytes : 1, 64), data = round_up(b, page_size());
    char *map = mmap(NULL, data + page_size(), PROT_NONE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED)
        fatal("fake device: out of memory allocating %zu bytes: %s", bytes, strerror(errno));
    char *sh = shadow_of(map, data);
    if (!sh)
        fatal("fake device: mapping the operations' view of %zu bytes: %s", bytes,
              strerror(errno));
    g_mem.in_use += b;
    struct fk_alloc *a = insert(map, data, b, site);
    a->shadow = sh;
    return a->base;
}

void fake_mem_free(void *p)
{
    if (!p)
        return;
    int i = lookup(p);
    if (i < 0 || g_mem.a[i].base != (char *)p || g_mem.a[i].peer)
        fatal("fake device: free(%p): not the start of a device allocation", p);
    struct fk_alloc *a = &g_mem.a[i];
    if (a->opens > 0)
        fatal("fake device: free of allocation #%d while an operation or MPI uses it", a->id);
    if (munmap(a->map, a->data + page_size()) != 0 ||
        munmap(a->shadow, a->data + page_size()) != 0)
        fatal("fake device: munmap: %s", strerror(errno));
    if (a->fd >= 0)
        close(a->fd);
    g_mem.in_use -= a->bytes;
    drop(a);
}

int fake_mem_find(const void *p, char **base, size_t *bytes)
{
    struct fk_alloc *a = p ? operand(p) : NULL;
    if (!a)
        return 0;
    *base = a->base;
    *bytes = a->bytes;
    return 1;
}

static struct fk_alloc *need_operand(const void *p, const char *op, const char *what)
{
    struct fk_alloc *a = operand(p);
    if (!a)
        fatal("fake device: %s: %s = %p is not device memory (a host buffer handed to a device "
              "operation: copy it to the device first)", op, what, p);
    return a;
}

void fake_mem_use(const void *p, int64_t seq)
{
    struct fk_alloc *a = p ? operand(p) : NULL;
    if (a && seq > a->use)
        a->use = seq;
}

int64_t fake_mem_last_use(const void *p, int *id)
{
    struct fk_alloc *a = p ? operand(p) : NULL;
    *id = a ? a->id : 0;
    return a ? a->use : 0;
}

void *fake_mem_shadow(const void *p, const char *op, const char *what)
{
    if (!p)
        return NULL;
    struct fk_alloc *a = need_operand(p, op, what);
    return a->shadow + ((const char *)p - a->map);
}

void fake_mem_open(const void *p, const char *op, const char *what)
{
    if (!p)
        return;
    struct fk_alloc *a = need_operand(p, op, what);
    if (a->opens++ == 0)
        protect(a, PROT_READ | PROT_WRITE);
}

void fake_mem_close(const void *p)
{
    if (!p)
        return;
    struct fk_alloc *a = operand(p);
    if (!a || a->opens <= 0)
        fatal("fake device: close of %p, which is not open", p);
    if (--a->opens == 0)
        protect(a, PROT_NONE);
}

size_t fake_mem_in_use(void) { return g_mem.in_use; }

/* --- pinned host memory ---------------------------------------------------- */

void *fake_pinned_alloc(size_t bytes)
{
    if (g_mem.npin == g_mem.cap_pin) {
        g_mem.cap_pin = g_mem.cap_pin ? 2 * g_mem.cap_pin : 16;
        g_mem.pin = xrealloc(g_mem.pin, (size_t)g_mem.cap_pin * sizeof *g_mem.pin);
    }
    char *p = xcalloc(bytes ? bytes : 1, 1);
    g_mem.pin[g_mem.npin++] = (struct pinned){p, bytes ? bytes : 1};
    return p;
}

void fake_pinned_free(void *p)
{
    if (!p)
        return;
    for (int i = 0; i < g_mem.npin; i++)
        if (g_mem.pin[i].p == p) {
            g_mem.pin[i] = g_mem.pin[--g_mem.npin];
            free(p);
            return;
        }
    fatal("fake device: host_free(%p): not pinned memory from host_alloc", p);
}

int fake_pinned_has(const void *p, size_t bytes)
{
    const char *c = p;
    for (int i = 0; i < g_mem.npin; i++)
        if (c >= g_mem.pin[i].p && c + bytes <= g_mem.pin[i].p + g_mem.pin[i].bytes)
            return 1;
    return 0;
}

/* --- the fault report -------------------------------------------------------- */

static void say(const char *s) { (void)!write(2, s, strlen(s)); }

/* The allocation whose shadow (data pages and guard page) holds p, or -1:
 * an operation's access (a linear scan: the fault report alone needs it). */
static int lookup_shadow(const void *p)
{
    for (int i = 0; i < g_mem.n; i++)
        if (g_mem.a[i].shadow && (const char *)p >= g_mem.a[i].shadow &&
            (const char *)p < g_mem.a[i].shadow + g_mem.a[i].data + page_size())
            return i;
    return -1;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    char msg[512];
    int i = lookup(si->si_addr), op = 0;
    if (i < 0 && (i = lookup_shadow(si->si_addr)) >= 0)
        op = 1;
    if (i < 0) { /* not ours: the handler before us (or the default) reports it */
        sigaction(SIGSEGV, &g_mem.old_segv, NULL);
        return;
    }
    const struct fk_alloc *a = &g_mem.a[i];
    /* the address in the allocation's own terms */
    const char *c = op ? a->map + ((const char *)si->si_addr - a->shadow) : si->si_addr;
    if (op)
        snprintf(msg, sizeof msg,
                 "\nfreescale: fake device [pid %d]: an operation ran %zu bytes past the end "
                 "of its operand, allocation #%d (%zu bytes%s), allocated at:\n",
                 (int)getpid(), (size_t)(c - (a->base + a->bytes)), a->id, a->bytes,
                 a->peer ? ", a peer's IPC mapping" : "");
    else if (c >= a->base + a->bytes)
        snprintf(msg, sizeof msg,
                 "\nfreescale: fake device [pid %d]: host code touched device memory: %p is "
                 "%zu bytes past the end of allocation #%d (%zu bytes%s), allocated at:\n",
                 (int)getpid(), si->si_addr, (size_t)(c - (a->base + a->bytes)), a->id,
                 a->bytes, a->peer ? ", a peer's IPC mapping" : "");
    else
        snprintf(msg, sizeof msg,
                 "\nfreescale: fake device [pid %d]: host code touched device memory: %p is "
                 "byte %lld of allocation #%d (%zu bytes%s), outside an operation on it "
                 "(copy device data to the host with to_host); allocated at:\n",
                 (int)getpid(), si->si_addr, (long long)(c - a->base), a->id, a->bytes,
                 a->peer ? ", a peer's IPC mapping" : "");
    say(msg);
    void *site = (void *)a->site;
    backtrace_symbols_fd(&site, 1, 2);
    say("the access:\n");
    void *frames[32];
    int n = backtrace(frames, 32);
    backtrace_symbols_fd(frames, n, 2);
    signal(sig, SIG_DFL); /* the access repeats and ends the process */
}

void fake_mem_guard_install(void)
{
    if (g_mem.guarded)
        return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &g_mem.old_segv) != 0)
        fatal("fake device: sigaction(SIGSEGV): %s", strerror(errno));
    g_mem.guarded = 1;
}

/* --- IPC through shared memory ---------------------------------------------- */

#define FK_IPC_MAGIC 0x66616b6569706321ull /* "fakeipc!" */

struct fk_handle {
    uint64_t magic;
    int32_t pid, fd;
    uint64_t data, offset; /* the mapping's data bytes; the pointer's offset in them */
};
_Static_assert(sizeof(struct fk_handle) <= BACKEND_IPC_HANDLE_BYTES, "handle too large");

/* Move allocation a into a memfd mapped at the same address. */
static int share(struct fk_alloc *a, char *err, size_t errlen)
{
    int fd = memfd_create("freescale-fake-device", MFD_CLOEXEC);
    if (fd < 0)
        return errorf(err, errlen, "memfd_create: %s", strerror(errno));
    if (ftruncate(fd, (off_t)a->data) != 0) {
        close(fd);
        return errorf(err, errlen, "ftruncate of shared memory: %s", strerror(errno));
    }
    for (size_t off = 0; off < a->data;) {
        ssize_t w = pwrite(fd, a->shadow + off, a->data - off, (off_t)off);
        if (w <= 0) {
            close(fd);
            return errorf(err, errlen, "writing shared memory: %s", strerror(errno));
        }
        off += (size_t)w;
    }
    int prot = a->opens > 0 ? PROT_READ | PROT_WRITE : PROT_NONE;
    if (mmap(a->map, a->data, prot, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
        mmap(a->shadow, a->data, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) ==
            MAP_FAILED) {
        close(fd);
        return errorf(err, errlen, "mapping shared memory: %s", strerror(errno));
    }
    a->fd = fd;
    return 0;
}

int fake_ipc_export(void *p, void *handle, char *err, size_t errlen)
{
    struct fk_alloc *a = operand(p);
    if (!a || a->peer)
        return errorf(err, errlen, "ipc_export(%p): not this process's device memory", p);
    if (a->fd < 0 && share(a, err, errlen))
        return -1;
    struct fk_handle h = {.magic = FK_IPC_MAGIC, .pid = (int32_t)getpid(), .fd = a->fd,
                          .data = a->data, .offset = (uint64_t)((char *)p - a->map)};
    memset(handle, 0, BACKEND_IPC_HANDLE_BYTES);
    memcpy(handle, &h, sizeof h);
    return 0;
}

void *fake_ipc_open(const void *handle, char *err, size_t errlen)
{
    struct fk_handle h;
    memcpy(&h, handle, sizeof h);
    if (h.magic != FK_IPC_MAGIC) {
        errorf(err, errlen, "ipc_open: not a handle of the fake device");
        return NULL;
    }
    if (h.pid == (int32_t)getpid()) {
        errorf(err, errlen, "ipc_open: a process cannot open its own handle");
        return NULL;
    }
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)h.pid, (int)h.fd);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0) {
        errorf(err, errlen, "ipc_open: cannot open %s (the peer's shared memory): %s", path,
               strerror(errno));
        return NULL;
    }
    char *map = mmap(NULL, h.data + page_size(), PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *sh = mmap(NULL, h.data + page_size(), PROT_NONE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (map == MAP_FAILED || sh == MAP_FAILED ||
        mmap(map, h.data, PROT_NONE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED ||
        mmap(sh, h.data, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
        errorf(err, errlen, "ipc_open: mapping %s: %s", path, strerror(errno));
        if (map != MAP_FAILED)
            munmap(map, h.data + page_size());
        if (sh != MAP_FAILED)
            munmap(sh, h.data + page_size());
        close(fd);
        return NULL;
    }
    close(fd); /* the mappings keep the memory */
    struct fk_alloc *a = insert(map, h.data, h.data - h.offset, NULL);
    a->shadow = sh;
    a->peer = 1;
    return a->base;
}

void fake_ipc_close(void *p)
{
    if (!p)
        return;
    struct fk_alloc *a = operand(p);
    if (!a || !a->peer || a->base != (char *)p)
        fatal("fake device: ipc_close(%p): not a mapping from ipc_open", p);
    if (a->opens > 0)
        fatal("fake device: ipc_close of a mapping still in use");
    if (munmap(a->map, a->data + page_size()) != 0 ||
        munmap(a->shadow, a->data + page_size()) != 0)
        fatal("fake device: munmap of an IPC mapping: %s", strerror(errno));
    drop(a);
}
