/* fake: the fake device's parts, shared by its files (fake/README):
 *
 *   fake_mem.c     guarded "device" memory: every allocation is an mmap
 *                  region whose address (the one host code holds) stays
 *                  PROT_NONE except while MPI transfers from or into it, so
 *                  that a host dereference faults at once; the SIGSEGV
 *                  handler names the allocation. Operations reach the same
 *                  pages through a second, read-write mapping (the shadow)
 *                  that only they see. Pinned host memory is registered too
 *                  (async copies must use it), and IPC maps allocations
 *                  between the processes of a node through shared memory.
 *   fake_compute.c the compute stream: operations run at once, or
 *                  (FREESCALE_FAKE_ASYNC=N) in a thread of their own, in
 *                  order, up to N operations behind the host.
 *   fake_copy.c    the copy stream's thread (FREESCALE_FAKE_ASYNC): its copies
 *                  run in order beside the host and the compute stream,
 *                  each once the compute work it follows has run.
 *   fake_stream.c  the comm stream and the events: copies and transports on
 *                  the comm stream are deferred until something makes them
 *                  due (a synchronisation, an event query that finds them
 *                  done, a compute operation that waits for them), so a
 *                  missing synchronisation shows as stale data.
 *   fake_device.c  the device management with the knobs, memory and copies,
 *                  events, IPC, the translation of an operation's operands;
 *   backend_fake.c the compute operations (the CPU's, each launched with its
 *                  operands translated) and the ops table.
 *
 * Operations come from one thread, the one that drives the device (the
 * stream's own thread only runs them). */
#ifndef FS_FAKE_H
#define FS_FAKE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "backend/backend.h"

/* --- fake_mem.c ---------------------------------------------------------- */

/* A new guarded allocation of bytes (zero-filled); site: the caller's
 * address, named in fault reports. */
void *fake_mem_alloc(size_t bytes, const void *site);
/* Release p (the start of an allocation; NULL: nothing). */
void fake_mem_free(void *p);
/* The allocation holding p (NULL if p is no device memory): its start and
 * bytes in *base, *bytes. */
int fake_mem_find(const void *p, char **base, size_t *bytes);
/* The operations' view (the shadow mapping) of device address p, NULL for
 * NULL; fatal() naming op and what when p is not device memory. */
void *fake_mem_shadow(const void *p, const char *op, const char *what);
/* Open the allocation holding p for host access at its own address (MPI
 * of the direct path; counted: opens nest) or close it again; fatal()
 * naming op and what when p is not device memory. */
void fake_mem_open(const void *p, const char *op, const char *what);
void fake_mem_close(const void *p);
/* The copy stream's checks (FREESCALE_FAKE_ASYNC, fake_stream.c): the
 * compute stream's item seq (or one run in the caller) uses the
 * allocation holding p; the last such item and the allocation's number
 * (0 when p is no device memory). */
void fake_mem_use(const void *p, int64_t seq);
int64_t fake_mem_last_use(const void *p, int *id);
/* Bytes of device memory allocated now. */
size_t fake_mem_in_use(void);
/* Pinned host memory: ordinary host memory, registered so that the
 * asynchronous copies can insist on it. */
void *fake_pinned_alloc(size_t bytes);
void fake_pinned_free(void *p);
/* 1 when p[bytes] lies in one pinned buffer. */
int fake_pinned_has(const void *p, size_t bytes);
/* Install the SIGSEGV handler that names the allocation a fault hit. */
void fake_mem_guard_install(void);
/* IPC (backend.h): export an allocation through shared memory, map a
 * peer's, unmap it. */
int fake_ipc_export(void *p, void *handle, char *err, size_t errlen);
void *fake_ipc_open(const void *handle, char *err, size_t errlen);
void fake_ipc_close(void *p);

/* --- fake_compute.c: the compute stream ------------------------------------- */

/* An operation's arguments, by value: integers, floats (as double: exact),
 * pointers (device operands already translated by fake_mem_shadow). */
union fk_arg {
    int64_t i;
    uint64_t u;
    double d;
    void *p;
};
#define FK_MAX_ARGS 24
#define FK_BLOB 64 /* bytes of a host structure an operation takes by pointer */
typedef void (*fk_run_fn)(const union fk_arg *a, const void *blob);
/* 0: operations run at once in the caller (default); N > 0: in the
 * stream's thread, up to N behind the host (FREESCALE_FAKE_ASYNC). */
void fake_compute_async(int lag);
int fake_compute_lag(void);
/* Enqueue an operation: run(a, blob) with copies of a[n] and blob. */
void fake_launch(fk_run_fn run, const union fk_arg *a, int n, const void *blob,
                 size_t blob_bytes);
/* LAUNCH(run, AI(n), AF(alpha), AP(x), ...): the arguments in order (AI
 * integers, AU uint64_t, AF float or double, AP pointers); LAUNCH_BLOB
 * also copies the host structure *ptr (bytes). */
#define AI(x) {.i = (x)}
#define AU(x) {.u = (x)}
#define AF(x) {.d = (x)}
#define AP(x) {.p = (void *)(x)}
#define LAUNCH(run, ...) LAUNCH_BLOB(run, NULL, 0, __VA_ARGS__)
#define LAUNCH_BLOB(run, ptr, bytes, ...)                                               \
    do {                                                                                \
        const union fk_arg a_[] = {__VA_ARGS__};                                        \
        fake_launch(run, a_, (int)(sizeof a_ / sizeof a_[0]), ptr, bytes);              \
    } while (0)
/* Items enqueued so far (0 when synchronous); whether the stream has run
 * the first seq; wait until it has (a host wait: the stream runs); nudge
 * it to run that far without waiting; wait for everything enqueued. */
int64_t fake_compute_enqueued(void);
int fake_compute_passed(int64_t seq);
void fake_compute_wait_for(int64_t seq);
void fake_compute_kick(int64_t seq);
/* The same wait from another thread (the copy stream's); the items the
 * host has seen run (waited for, or a completed event's mark: what host
 * code may rely on); the host saw the first seq run. */
void fake_compute_reach(int64_t seq);
int64_t fake_compute_seen(void);
void fake_compute_saw(int64_t seq);
void fake_compute_wait(void);
/* Enqueue event e's mark (record generation gen): when the stream reaches
 * it, fake_event_mark(e, gen) runs there. Returns the mark's position. */
int64_t fake_compute_mark(struct backend_event *e, uint64_t gen);

/* The streams' threads' parts (fake_compute.c): lock mu (fatal() naming
 * who on failure); grow the ring *q of count items of size bytes at
 * *head (of *cap) when full, unrolled to its start. */
void fake_lock(pthread_mutex_t *mu, const char *who);
void fake_ring_grow(void **q, size_t size, int64_t *cap, int64_t *head, int64_t count);

/* --- fake_copy.c: the copy stream's thread ------------------------------------ */

/* on: the copy stream's copies run in a thread of their own (with
 * FREESCALE_FAKE_ASYNC), each taking at least bytes / gbs GB/s (gbs > 0:
 * FREESCALE_FAKE_COPY_GBS); off: fake_stream.c runs them when due. */
void fake_copy_async(int on, double gbs);
int fake_copy_on(void);
/* Enqueue dst[bytes] = src[bytes] (both host addresses or the operations'
 * view of device memory), run once the compute stream has run its first
 * cseq items. */
void fake_copy_push(void *dst, const void *src, size_t bytes, int64_t cseq);
/* Copies run so far; wait until the first seq have (any thread). */
int64_t fake_copy_ran(void);
void fake_copy_wait_for(int64_t seq);

/* --- fake_stream.c ------------------------------------------------------- */

/* Every call into the device advances the clock of "device time": an event
 * recorded before the latest call has had time to complete (event_query
 * then says so); one recorded by the latest call has not. */
void fake_tick(void);
/* Run the deferred work the compute stream waits for (before a compute
 * operation or a compute-stream synchronisation). */
void fake_compute_due(void);
/* Enqueue a copy on the comm stream: dst[bytes] = src[bytes] when it runs
 * (either side may be device memory, opened then); add: dst += src as
 * floats instead (comm_add). */
void fake_comm_copy(void *dst, const void *src, size_t bytes);
void fake_comm_add(float *y, const float *x, int64_t n);
/* Enqueue a copy on the copy stream (after the compute mark it was last
 * made to wait for only); early: run it once that mark is passed (copies
 * down), else when due (copies up). */
void fake_copy_copy(void *dst, const void *src, size_t bytes, int early);
/* With the copy stream's thread: fatal() naming op and what when device
 * operand p of a compute operation lies in an allocation that a copy not
 * yet ordered before the compute stream's work writes or reads (a missing
 * stream_wait for its event); p is then the operation's operand, whose
 * use (fake_mem_use) is recorded when the operation is launched as item
 * seq (fake_launch), dropped when the host runs it (fake_compute_wait_for:
 * done before the host goes on). */
void fake_copy_check_use(const void *p, const char *op, const char *what);
void fake_copy_uses_launched(int64_t seq);
void fake_copy_uses_drop(void);
/* Run everything enqueued on the comm stream. */
void fake_comm_drain(void);
/* The work enqueued so far on the comm stream will have run before the
 * next compute operation (to_device_async: kernels enqueued after it see
 * the data). */
void fake_compute_after_comm(void);

struct backend_event *fake_event_new(int timing);
void fake_event_free(struct backend_event *e);
void fake_event_record(struct backend_event *e, enum backend_stream s);
int fake_event_query(struct backend_event *e);
void fake_event_sync(struct backend_event *e);
void fake_stream_wait(enum backend_stream s, struct backend_event *e);
float fake_event_ms(struct backend_event *start, struct backend_event *end);
/* The compute stream has reached e's mark of record generation gen (runs
 * in the stream's thread). */
void fake_event_mark(struct backend_event *e, uint64_t gen);

/* --- fake_device.c: the device, memory, copies, events ----------------------- */

/* One operation: begun (what the compute stream waits for is due first),
 * then its device operands translated to the operations' view (fake_op_arg:
 * NULL = an absent optional one; fatal() when not device memory), then
 * launched (fake_launch) or, when the host reads its result, run in the
 * caller once the stream has caught up (fake_compute_wait). */
struct fk_op {
    const char *name;
};
void fake_op_begin(struct fk_op *o, const char *name);
void *fake_op_arg(struct fk_op *o, const void *p, const char *what);
/* fatal() when p is device memory (a host buffer was expected) */
void fake_not_device(const void *p, const char *op, const char *what);

int fk_device_count(char *err, size_t errlen);
int fk_device_uuid(int device, char *buf, size_t len, char *err, size_t errlen);
int fk_device_open(int device, int tf32, char *err, size_t errlen);
void fk_device_describe(char *buf, size_t len);
int fk_device_memory(size_t *free_bytes, size_t *total_bytes, char *err, size_t errlen);
int fk_mpi_direct(void);
void fk_mpi_expose(const void *p, size_t bytes, int on);
void *fk_alloc(size_t bytes);
void fk_free(void *p);
void fk_to_device(void *dst, const void *src, size_t bytes);
void fk_to_host(void *dst, const void *src, size_t bytes);
void fk_copy(void *dst, const void *src, size_t bytes);
void fk_zero(void *p, size_t bytes);
void fk_synchronize(void);
void *fk_host_alloc(size_t bytes);
void fk_host_free(void *p);
void fk_to_host_async(void *dst, const void *src, size_t bytes);
void fk_to_device_async(void *dst, const void *src, size_t bytes);
void fk_comm_sync(void);
void fk_copy_up(void *dst, const void *src, size_t bytes);
void fk_copy_down(void *dst, const void *src, size_t bytes);
int fk_ipc_export(void *p, void *handle, char *err, size_t errlen);
void *fk_ipc_open(const void *handle, char *err, size_t errlen);
void fk_ipc_close(void *p);
void fk_peer_copy(void *dst, const void *src, size_t bytes, int use_kernel);
void fk_comm_add(float *y, const float *x, int64_t n);
struct backend_event *fk_event_new(int timing);
void fk_event_record(struct backend_event *e, enum backend_stream s);
int fk_event_query(struct backend_event *e);
void fk_event_sync(struct backend_event *e);
void fk_stream_wait(enum backend_stream s, struct backend_event *e);

/* --- backend_fake_ctx.c: context-parallel and rows attention, full and logQ softmax --- */

void fk_hstu_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                          const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                          const float *q, const float *kb, const float *vb, const float *pos_bias,
                          const float *time_bias, const int64_t *key_ts, float *out);
void fk_hstu_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                          const int64_t *key_off, int keys, int H, int dqk, int dv, int N,
                          const float *q, const float *kb, const float *vb, const float *pos_bias,
                          const float *time_bias, const int64_t *key_ts, const float *dout,
                          float *dq, float *dkb, float *dvb, float *dpos_bias, float *dtime_bias);
void fk_hstu_attn_rows_fwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                           const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                           const float *kb, const float *vb, const float *pos_bias,
                           const float *time_bias, const int64_t *key_ts, float *out);
void fk_hstu_attn_rows_bwd(int64_t B, const int64_t *qoff, const int64_t *qpos,
                           const int64_t *key_off, int H, int dqk, int dv, int N, const float *q,
                           const float *kb, const float *vb, const float *pos_bias,
                           const float *time_bias, const int64_t *key_ts, const float *dout,
                           float *dq, float *dkb, float *dvb, float *dpos_bias,
                           float *dtime_bias);
void fk_sasrec_attn_ctx_fwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                            const int64_t *key_off, int keys, int H, int dh, const float *q,
                            const float *kb, const float *vb, float *out, float *lse);
void fk_sasrec_attn_ctx_bwd(int64_t B, const int64_t *offsets, const int64_t *pos0,
                            const int64_t *key_off, int keys, int H, int dh, const float *q,
                            const float *kb, const float *vb, const float *out, const float *lse,
                            const float *dout, float *dq, float *dkb, float *dvb);
void fk_softmax_loss_q(int64_t T, int d, int R, float inv_tau, const float *u, int64_t nu,
                       const float *e, const float *logq, const int64_t *pos, const int64_t *neg,
                       float scale, float *du, float *de, double *acc);
void fk_softmax_block_lse(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *s,
                          float *lse);
void fk_softmax_block_grad(int64_t n, int64_t m, int64_t lds, float inv_tau, const float *lse,
                           const int64_t *tcol, float gscale, float *s, double *acc);

/* --- backend_fake_dyn.c: the dynamic tables' operations (backend.h) ------------- */
int64_t fk_emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                         int64_t *inverse, int64_t *counts);
void fk_dyn_find(int64_t n, const int64_t *ids, const int64_t *keys, const int64_t *vals,
                 int64_t cap, int64_t *slot);
void fk_dyn_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last, int64_t *freq);
void fk_dyn_missing(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out);
void fk_dyn_insert(int64_t k, const int64_t *ids, const float *rows, int width, int64_t nfree,
                   const int64_t *freel, int64_t next, int64_t clock, int64_t *keys,
                   int64_t *vals, int64_t cap, int64_t *sid, int64_t *last, int64_t *freq,
                   float *w, float *state, int64_t state_floats, int64_t *steps);
void fk_dyn_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap, int64_t *keys,
                   int64_t *vals, int64_t cap);
void fk_dyn_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid, const int64_t *last,
                   int64_t *keys, int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone,
                   int64_t *ctl);
void fk_dyn_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys, int64_t *pvals,
                  int64_t pcap, int64_t prob_max, int64_t *scratch, int64_t *ctl);
void fk_dyn_evict_full(int lfu, int64_t clock, int64_t next, int64_t top, const int64_t *out,
                       int64_t *sid, const int64_t *last, const int64_t *freq, int64_t *keys,
                       int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl,
                       int64_t *scratch);
void fk_dyn_virtual(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                    const int64_t *vals, int64_t cap, int G, int shard, int count, int64_t *acc);

#endif
