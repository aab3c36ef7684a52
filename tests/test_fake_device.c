/* test_fake_device: the fake device (fake/) behaves like a discrete GPU in
 * what host code can get wrong:
 *   - a host dereference of device memory faults at once, and the report
 *     names the allocation (a child process does it); so does an
 *     operation that runs past the end of its operand;
 *   - an operation handed host memory, an asynchronous copy from pageable
 *     memory, a free of host memory end the process naming the mistake;
 *   - copies on the comm stream are deferred: a pinned buffer read before
 *     the synchronisation holds the old values (a missing sync shows as
 *     stale data), after it the new ones; an event is not complete right
 *     after its record, is after the device has been called again, and
 *     event_sync runs the work; a compute operation after to_device_async
 *     sees the data; a pinned source overwritten before the copy ran is
 *     what the device receives;
 *   - IPC: another process maps an exported allocation through shared
 *     memory and copies both ways;
 *   - the compute stream behind the host (FREESCALE_FAKE_ASYNC): a buffer
 *     that MPI writes (direct path) while an operation enqueued before
 *     still reads it, with no wait in between, changes that operation's
 *     result (the missing ordering is caught); with the wait it does not;
 *     a polled compute event completes; everything above passes again
 *     with the stream in its thread;
 *   - the copy stream in its thread (with FREESCALE_FAKE_ASYNC): a copy
 *     runs with no host wait, copies and compute work ordered by events
 *     give the right values, and a compute operation on a copy up's
 *     destination without the wait for it, or a copy down of a buffer that
 *     compute work the copy stream did not wait for still uses, ends the
 *     process naming the mistake;
 *   - the counters (devstats.h) count host waits, bytes and allocations;
 *   - device identities and the knobs (FREESCALE_FAKE_GPUS, _MEM, _AWARE).
 * Exit 0 pass, 1 fail. */
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "backend/devstats.h"
#include "expect.h"
#include "fake/fake.h"

static const struct backend_ops *be = &backend_fake;

/* A child that ends in fatal() (exit) leaves at once: the exit handlers
 * belong to the parent (LeakSanitizer's would check a process whose thread
 * list is the parent's: the fake device's stream thread does not exist in
 * the child, "was not suspended", and its memory reads as leaked). */
static void child_exit(int status, void *arg)
{
    (void)arg;
    _exit(status);
}

/* Run fn in a child with stderr captured into out[len]; returns the wait
 * status. */
static int in_child(void (*fn)(void *), void *arg, char *out, size_t len)
{
    int fds[2];
    if (pipe(fds) != 0)
        return -1;
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        on_exit(child_exit, NULL);
        fn(arg);
        _exit(0);
    }
    close(fds[1]);
    size_t n = 0;
    ssize_t r;
    while (n + 1 < len && (r = read(fds[0], out + n, len - 1 - n)) > 0)
        n += (size_t)r;
    out[n] = '\0';
    close(fds[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

static void touch(void *p) { ((volatile float *)p)[3] = 1.0f; }

static void overrun(void *p)
{
    be->scale(4096, 2.0f, p); /* a 100-float operand */
    be->synchronize();
}

static void test_fault(void)
{
    float *x = be->alloc(100 * sizeof(float));
    char out[4096];
    int st = in_child(touch, x, out, sizeof out);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV, "a host write to device memory did not "
          "fault (status %d)", st);
    CHECK(strstr(out, "host code touched device memory") && strstr(out, "byte 12 of allocation #")
          && strstr(out, "(448 bytes"), "the fault report does not name the allocation: %s", out);
    st = in_child(overrun, x, out, sizeof out);
    CHECK(WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV && strstr(out, "an operation ran 0 bytes "
          "past the end of its operand, allocation #") && strstr(out, "(448 bytes"),
          "an operation's overrun: status %d, %s", st, out);
    be->free(x);
}

static void axpy_host(void *p)
{
    float *d = p, h[4] = {0};
    be->axpy(4, 1.0f, h, d); /* x is host memory */
}

static void async_pageable(void *p)
{
    float h[4];
    be->to_host_async(h, p, sizeof h);
}

static void free_host(void *p)
{
    (void)p;
    be->free(malloc(16));
}

static void test_misuse(void)
{
    float *d = be->alloc(4 * sizeof(float));
    char out[4096];
    int st = in_child(axpy_host, d, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "axpy: x = ") &&
          strstr(out, "is not device memory"), "host memory in an operation: %s", out);
    st = in_child(async_pageable, d, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "is not pinned memory"),
          "an asynchronous copy from pageable memory: %s", out);
    st = in_child(free_host, NULL, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
          strstr(out, "not the start of a device allocation"), "free of host memory: %s", out);
    be->free(d);
}

static void test_deferred(void)
{
    const int n = 64;
    float *d = be->alloc(n * sizeof(float)), *h = be->host_alloc(n * sizeof(float));
    float src[64], got[64];
    for (int i = 0; i < n; i++)
        src[i] = (float)i + 0.5f;
    be->to_device(d, src, sizeof src);
    memset(h, 0, n * sizeof(float));
    be->to_host_async(h, d, n * sizeof(float));
    CHECK(h[5] == 0.0f, "a copy down landed before any synchronisation (h[5] = %g)", h[5]);
    be->comm_sync();
    CHECK(h[5] == 5.5f, "comm_sync did not run the copy down (h[5] = %g)", h[5]);

    /* events: not done right after the record, done once the device was called again */
    struct backend_event *e = be->event_new(0);
    memset(h, 0, n * sizeof(float));
    be->to_host_async(h, d, n * sizeof(float));
    be->event_record(e, BACKEND_COMM);
    CHECK(be->event_query(e) == 0, "an event completed right after its record");
    CHECK(h[7] == 0.0f, "the copy ran before its event was found complete");
    be->scale(n, 1.0f, d); /* time passes on the device */
    CHECK(be->event_query(e) == 1, "an event not complete after a later call");
    CHECK(h[7] == 7.5f, "a completed event's copy has not landed (h[7] = %g)", h[7]);
    memset(h, 0, n * sizeof(float));
    be->to_host_async(h, d, n * sizeof(float));
    be->event_record(e, BACKEND_COMM);
    be->event_sync(e);
    CHECK(h[9] == 9.5f, "event_sync did not run the copy (h[9] = %g)", h[9]);

    /* up: the compute stream waits; the pinned source is read when the copy runs */
    for (int i = 0; i < n; i++)
        h[i] = 2.0f;
    be->to_device_async(d, h, n * sizeof(float));
    for (int i = 0; i < n; i++)
        h[i] = 3.0f; /* overwritten before the copy ran: a real race, made visible */
    be->scale(n, 2.0f, d); /* runs after the copy */
    be->to_host(got, d, sizeof got);
    CHECK(got[0] == 6.0f, "the compute stream did not wait for the copy up, or read the source "
          "early (got %g, want 6 = 2 x the value at run time)", got[0]);

    /* a compute event waits for what the compute stream waits for */
    be->to_device_async(d, h, n * sizeof(float));
    be->event_record(e, BACKEND_COMPUTE);
    be->event_sync(e);
    be->to_host(got, d, sizeof got);
    CHECK(got[1] == 3.0f, "a compute event completed before the copy it waits for");
    be->event_free(e);
    be->host_free(h);
    be->free(d);
}

static void ipc_child(void *handle)
{
    char err[256];
    float *peer = be->ipc_open(handle, err, sizeof err);
    if (!peer) {
        fprintf(stderr, "child: %s\n", err);
        _exit(2);
    }
    float *mine = be->alloc(8 * sizeof(float)), got[8];
    be->peer_copy(mine, peer, sizeof got, 0);
    be->comm_sync();
    be->to_host(got, mine, sizeof got);
    for (int i = 0; i < 8; i++)
        if (got[i] != (float)(10 + i)) {
            fprintf(stderr, "child: got[%d] = %g\n", i, got[i]);
            _exit(3);
        }
    be->scale(8, -1.0f, mine);
    be->comm_add(peer, mine, 8); /* the parent's buffer: 10 + i - (10 + i) = 0 ... */
    be->peer_copy(peer + 8, mine, 8 * sizeof(float), 1); /* ... and -(10 + i) after it */
    be->comm_sync();
    be->ipc_close(peer);
    be->free(mine);
    _exit(0);
}

static void test_ipc(void)
{
    float *d = be->alloc(16 * sizeof(float)), v[16];
    for (int i = 0; i < 16; i++)
        v[i] = (float)(10 + i);
    be->to_device(d, v, sizeof v);
    unsigned char handle[BACKEND_IPC_HANDLE_BYTES];
    char err[256];
    if (be->ipc_export(d, handle, err, sizeof err)) {
        CHECK(0, "ipc_export: %s", err);
        return;
    }
    char out[1024];
    int st = in_child(ipc_child, handle, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the peer process failed (status %d): %s", st,
          out);
    be->to_host(v, d, sizeof v);
    CHECK(v[0] == 0.0f && v[7] == 0.0f && v[8] == -10.0f && v[15] == -17.0f,
          "the peer's writes did not arrive: %g %g %g %g", v[0], v[7], v[8], v[15]);
    CHECK(be->ipc_open(handle, err, sizeof err) == NULL && strstr(err, "own handle"),
          "a process opened its own handle");
    be->free(d);
}

/* y = x on the stream, then x written by "MPI" (through its own address,
 * opened by mpi_expose as for a receive of the direct path); sync: wait
 * for the stream (an event of the compute stream) before the receive.
 * Returns y[0] as the host finally reads it. */
static float recv_after_use(int sync)
{
    const int n = 16;
    float *x = be->alloc(n * sizeof(float)), *y = be->alloc(n * sizeof(float)), h[16];
    for (int i = 0; i < n; i++)
        h[i] = 1.0f;
    be->to_device(x, h, sizeof h);
    be->zero(y, sizeof h);
    be->axpy(n, 1.0f, x, y); /* the earlier use of x */
    struct backend_event *e = be->event_new(0);
    be->event_record(e, BACKEND_COMPUTE);
    if (sync)
        be->event_sync(e);
    be->mpi_expose(x, sizeof h, 1); /* the receive into x */
    for (int i = 0; i < n; i++)
        x[i] = 5.0f;
    be->mpi_expose(x, sizeof h, 0);
    be->to_host(h, y, sizeof h);
    be->event_free(e);
    be->free(x);
    be->free(y);
    return h[0];
}

static void test_async(void)
{
    fake_compute_async(1000);
    float y = recv_after_use(0);
    CHECK(y == 5.0f, "a receive into a buffer that an operation enqueued before still reads, "
          "with no wait in between, went unseen (y = %g, want 5: the operation ran late and read "
          "the received data)", y);
    y = recv_after_use(1);
    CHECK(y == 1.0f, "with the wait for the compute stream the operation read y = %g, want 1", y);

    /* a compute event found by polling alone: the stream is nudged to it */
    float *d = be->alloc(64);
    be->zero(d, 64);
    struct backend_event *e = be->event_new(0);
    be->event_record(e, BACKEND_COMPUTE);
    long polls = 0;
    while (!be->event_query(e) && polls < 100000000L) {
        polls++;
        sched_yield();
    }
    CHECK(be->event_query(e), "a polled compute event never completed (%ld polls)", polls);
    be->event_free(e);
    be->free(d);
    fake_compute_wait();
}

/* the copy stream's thread: a copy up whose event the compute stream was
 * not made to wait for, used by a compute operation */
static void copy_unwaited(void *arg)
{
    float *p = be->host_alloc(64 * sizeof(float));
    float *d = arg;
    be->copy_up(d, p, 64 * sizeof(float));
    be->scale(64, 2.0f, d);
}

/* a copy down of a buffer that compute work enqueued after the copy
 * stream's last wait still writes */
static void copy_down_early(void *arg)
{
    float *p = be->host_alloc(64 * sizeof(float));
    float *d = arg;
    be->scale(64, 2.0f, d);
    be->copy_down(p, d, 64 * sizeof(float));
}

static void test_copy_thread(void)
{
    fake_compute_async(1000);
    fake_copy_async(1, 0);
    const int n = 64;
    float *d = be->alloc(n * sizeof(float)), *p = be->host_alloc(n * sizeof(float));
    float got[64];
    for (int i = 0; i < n; i++)
        p[i] = (float)i;
    struct backend_event *e = be->event_new(0), *c = be->event_new(0);
    /* the copy runs with no host wait and no call into the device */
    const int64_t ran = fake_copy_ran();
    be->copy_up(d, p, n * sizeof(float));
    long spins = 0;
    while (fake_copy_ran() == ran && spins < 100000000L) {
        spins++;
        sched_yield();
    }
    CHECK(fake_copy_ran() > ran, "the copy stream's thread did not run a copy by itself");
    /* the compute stream waits for it through the event, the host does not */
    be->event_record(e, BACKEND_COPY);
    be->stream_wait(BACKEND_COMPUTE, e);
    be->scale(n, 2.0f, d);
    be->event_record(c, BACKEND_COMPUTE);
    be->stream_wait(BACKEND_COPY, c);
    be->copy_down(p, d, n * sizeof(float));
    be->event_record(e, BACKEND_COPY);
    be->event_sync(e);
    memcpy(got, p, sizeof got);
    int bad = 0;
    for (int i = 0; i < n; i++)
        bad += got[i] != 2.0f * (float)i;
    CHECK(!bad, "copy up, scale, copy down ordered by events: %d values wrong", bad);
    /* missing waits are caught, either way */
    char out[4096];
    int st = in_child(copy_unwaited, d, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 && strstr(out, "scale: x = ") &&
          strstr(out, "copy_up #") && strstr(out, "was not made to wait for that copy"),
          "a compute operation on a copy up's destination, no wait: status %d, %s", st, out);
    st = in_child(copy_down_early, d, out, sizeof out);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) != 0 &&
          strstr(out, "copy_down: device allocation #") &&
          strstr(out, "the copy stream was not made to wait for"),
          "a copy down of a buffer that compute work still writes: status %d, %s", st, out);
    be->event_free(e);
    be->event_free(c);
    be->host_free(p);
    be->free(d);
    fake_copy_async(0, 0);
    fake_compute_wait();
    fake_compute_async(0);
}

static void test_counters(void)
{
    struct devstats s;
    devstats_take(&s);
    float *d = be->alloc(32), h[8] = {0};
    float *p = be->host_alloc(32);
    be->to_device(d, h, 32);
    be->to_host(h, d, 32);
    be->to_host_async(p, d, 32);
    be->to_device_async(d, p, 16);
    be->synchronize();
    be->comm_sync();
    devstats_take(&s);
    CHECK(s.allocs == 2 && s.h2d == 48 && s.d2h == 64 && s.syncs == 4,
          "counters: allocs %lld h2d %lld d2h %lld syncs %lld (want 2 48 64 4)",
          (long long)s.allocs, (long long)s.h2d, (long long)s.d2h, (long long)s.syncs);
    be->host_free(p);
    be->free(d);
}

static void test_identity(void)
{
    char id[96], err[256];
    CHECK(be->device_count(err, sizeof err) == 3, "FREESCALE_FAKE_GPUS=a,b,c: %d devices",
          be->device_count(err, sizeof err));
    CHECK(be->device_uuid(1, id, sizeof id, err, sizeof err) == 0 && !strcmp(id, "fake-b"),
          "device 1: '%s'", id);
    CHECK(be->device_uuid(3, id, sizeof id, err, sizeof err) != 0, "device 3 identified");
    size_t fr, tot;
    be->device_memory(&fr, &tot, err, sizeof err);
    CHECK(tot == (size_t)3 << 20, "FREESCALE_FAKE_MEM=3M: total %zu", tot);
    CHECK(be->mpi_direct() == 1, "FREESCALE_FAKE_AWARE=1 not seen");
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    setenv("FREESCALE_FAKE_GPUS", "a,b,c", 1);
    setenv("FREESCALE_FAKE_MEM", "3M", 1);
    setenv("FREESCALE_FAKE_AWARE", "1", 1);
    char err[256];
    if (be->device_open(1, 0, err, sizeof err) != 0) {
        printf("FAIL: device_open: %s\n", err);
        return 1;
    }
    test_identity();
    test_fault();
    test_misuse();
    test_deferred();
    test_ipc();
    test_counters();
    /* the compute stream in a thread, behind the host: the same behaviour */
    test_async();
    fake_compute_async(4);
    test_fault();
    test_misuse();
    test_deferred();
    test_ipc();
    test_counters();
    fake_compute_wait();
    fake_compute_async(0);
    test_copy_thread();
    if (failures) {
        printf("%d check(s) failed\n", failures);
        return 1;
    }
    printf("the fake device behaves\n");
    return 0;
}
