/* emb_exchange_priv: the state of the exchanges, private to the embedding
 * module (emb_exchange.c, emb_backward.c, emb_xfer.c, emb_xstate.c);
 * callers use emb_exchange.h.
 *
 * Every buffer of an exchange lives in the table's memory (its backend's:
 * host memory for host tables, device memory for device tables) and is
 * kept: exchanges are recycled through a per-table pool, so a step
 * allocates nothing once its buffers have grown to the step's sizes. Only
 * the per-owner counts and the layout derived from them are host arrays. */
#ifndef FS_EMB_EXCHANGE_PRIV_H
#define FS_EMB_EXCHANGE_PRIV_H

#include <stdlib.h>

#include "backend/stage.h"
#include "base/check.h"
#include "embedding/emb_exchange.h"

/* A buffer of a backend's memory, grown as needed (zero-filled when new)
 * and kept. */
struct emb_buf {
    void *p;
    size_t cap;
};
void *emb_buf_get(const struct backend_ops *be, struct emb_buf *b, size_t bytes);
void emb_buf_free(const struct backend_ops *be, struct emb_buf *b);

/* --- transfers (emb_xfer.c) ---------------------------------------------------
 * One exchange of rows between the ranks of the emb group: rows of width
 * elements of a type, per peer a segment of a send buffer to a segment of
 * a receive buffer (counts and displacements in rows, [G] each), both in
 * the table's memory. How it travels depends on the table:
 *   host      MPI_Ialltoallv on host memory (the CPU's way, as always);
 *             while the per-peer trace records (output.trace_peers), and
 *             for the rows of a held exchange (emb_output_hold, whose
 *             chunk 1 may be posted at any test), one send and one receive
 *             per peer instead, so that each peer's completion is seen
 *             (comm_trace.h) and the order of posts needs no agreement;
 *   staged    device tables, MPI not CUDA-aware: the send segments go down
 *             to pinned buffers on the comm stream (one copy per peer), the
 *             sends are posted once those copies are done (found by an
 *             event query, or waited for), point-to-point on the pinned
 *             buffers; received segments go up on the comm stream and the
 *             compute stream waits for them, not the host; the pinned
 *             buffers are kept per kind of transfer;
 *   direct    device tables, CUDA-aware MPI: point-to-point sends and
 *             receives of the device segments themselves, posted once the
 *             compute stream has produced them (never a non-blocking
 *             collective on device memory).
 * With parallel.transport = copy-engine | kernel, a device table's
 * segments between ranks of one node go through CUDA IPC instead (on top
 * of staged or direct, which carry the segments between nodes): through a
 * window per kind of transfer that the node's peers map, copied by the
 * copy engines (or a copy kernel) on the comm stream; emb_ipc.c.
 * A rank's own segment is a device copy. post / test / wait are the
 * phases; a later kind never waits for an earlier one. */
enum emb_xkind {
    EMB_X_IDS, EMB_X_ROWS0, EMB_X_ROWS1, EMB_X_GRADS0, EMB_X_GRADS1,
    EMB_X_MASK, EMB_X_PF, EMB_X_LATE, /* parallel.overlap = prefetch (emb_prefetch.c) */
    EMB_NX
};
enum emb_xmode { EMB_XF_HOST, EMB_XF_STAGED, EMB_XF_DIRECT };

/* One side of a transfer among the G ranks of the emb group: rows
 * counts[p] to (or from) peer p, at row displs[p] of the buffer. Host
 * arrays [G] each. */
struct emb_side {
    int64_t *counts, *displs;
};
/* A transfer's layout: what this rank sends to each peer, what it receives
 * from each (one allocation: emb_layout_new). */
struct emb_layout {
    struct emb_side send, recv;
};
static inline struct emb_layout emb_layout_new(int G)
{
    int64_t *a = xmalloc((size_t)G * 4 * sizeof(int64_t));
    return (struct emb_layout){.send = {a, a + G}, .recv = {a + 2 * G, a + 3 * G}};
}
static inline void emb_layout_free(struct emb_layout *l) { free(l->send.counts); }

struct emb_xfer {
    int active, kind;
    struct emb_table *t;
    struct comm *c;
    enum comm_dtype type;
    int64_t width;           /* elements per row */
    size_t rb;               /* bytes per row */
    enum comm_phase ph;
    const char *send;
    char *recv;
    struct emb_layout lay;   /* in rows */
    struct comm_request req; /* host: the all-to-all */
    struct comm_msgs sq, rq; /* device, and host while the per-peer trace records: the
                                messages */
    int sends_posted, recvd;
    int p2p;                 /* host: point-to-point messages instead of the all-to-all */
    int p2p_asked;           /* set before the post: p2p whatever the trace (emb_output_hold) */
    struct backend_event *reuse; /* device: recv may be written once this completed (the
                                    compute stream's last use of the pooled buffers), or NULL */
};

void emb_xfer_post(struct emb_table *t, struct comm *c, struct emb_xfer *f, int kind,
                   enum comm_dtype type, int64_t width, const void *send, const int64_t *sc,
                   const int64_t *sd, void *recv, const int64_t *rc, const int64_t *rd,
                   enum comm_phase ph);
/* Advance without blocking; 1 once complete (or never posted). */
int emb_xfer_test(struct emb_xfer *f);
/* Block until the rows are in the receive buffer (device tables: before
 * the compute stream's next operation). */
void emb_xfer_wait(struct emb_xfer *f);

/* --- within a node through CUDA IPC (emb_ipc.c) ---------------------------------
 * emb_ipc_init (emb_exchange.h) turns it on. emb_ipc_peer: peer p's
 * segments go that way. emb_ipc_post (in emb_xfer_post): wait for the
 * acknowledgements of the kind's last transfer, copy the segments for the
 * node's peers into the window, post the hand-off receives; 1 when
 * segments were copied (the ready event must follow them on the comm
 * stream). emb_ipc_send (once ready): the hand-offs. emb_ipc_test:
 * progress; 1 once the segments arrived and the hand-offs are out (block:
 * wait for both). emb_ipc_free: collective, in emb_xstate_free. */
struct emb_ipc;
int emb_ipc_peer(const struct emb_table *t, int p);
int emb_ipc_post(struct emb_xfer *f);
void emb_ipc_send(struct emb_xfer *f);
int emb_ipc_test(struct emb_xfer *f, int block);
void emb_ipc_free(struct emb_table *t);

/* --- what a table's exchanges share (emb_xstate.c) ----------------------------- */

#define EMB_POOL 4

struct emb_xstate {
    enum emb_xmode mode;
    struct emb_exchange *pool[EMB_POOL]; /* released exchanges, their buffers kept */
    int npool;
    struct emb_buf pin_s[EMB_NX], pin_r[EMB_NX]; /* staged: pinned buffers per kind */
    struct backend_event *ready[EMB_NX];  /* the send segments of a kind are staged / final */
    struct backend_event *landed[EMB_NX]; /* its received segments went up */
    int landing[EMB_NX];                  /* landed[k] recorded */
    struct emb_buf ids, keys;             /* the ids of the next lookup (emb_ids_*) */
    struct stage *up;                     /* their uploads */
    struct emb_buf stats;                 /* int64 [1]: tokens owned here, counted */
    int64_t tokens;                       /* tokens of the counted lookups */
    struct emb_ipc *ipc;                  /* parallel.transport = copy-engine | kernel:
                                             the node's peers' state (emb_ipc.c), or NULL */
    uint8_t *touched;                     /* prefetch: [local_rows / 8 + 1] bits, clear
                                             between uses (emb_prefetch.c) */
};

/* The table's state, made on first use. */
struct emb_xstate *emb_xstate(struct emb_table *t);
void emb_xstate_free(struct emb_table *t);
/* Fold the counters kept in the table's memory into t->wire. */
void emb_xstate_wire(struct emb_table *t);
/* A pooled exchange (zeroed but for its buffers), and its release. */
struct emb_exchange *emb_xstate_get(struct emb_table *t);
void emb_xstate_put(struct emb_table *t, struct emb_exchange *x);

/* --- one exchange --------------------------------------------------------------- */

enum emb_stage { EMB_IDLE, EMB_COUNTS_POSTED, EMB_COUNTS_DONE, EMB_IDS_POSTED, EMB_IDS_DONE };

/* Unique ids are in two chunks (emb_exchange.h); within each owner's block
 * of uniq, chunk 0 comes first. [n] etc.: sizes; "t": table memory. */
struct emb_exchange {
    struct comm *c;
    struct emb_table *tab;
    int G;
    int64_t n;                 /* tokens */
    int64_t nuniq;             /* unique ids requested */
    int64_t nserve;            /* ids this rank serves as owner */
    int dim, width;            /* a row's values; of them on the wire (subspace: k) */
    enum emb_codec rcodec, gcodec; /* wire formats (emb_codec.h) */
    int counted;               /* counted in the table's wire stats */
    /* host: the layout */
    int64_t *scounts, *sdispls, *rcounts, *rdispls; /* [G] ids per peer */
    int64_t *scounts0, *rcounts0; /* [G] of which in chunk 0 */
    struct emb_span *spans;    /* [2G] the requester's rows of chunk 0, then chunk 1 */
    int64_t *cnt;              /* [4G] counts sent and received */
    enum emb_stage stage;      /* of the counts and ids exchange */
    struct comm_request req;   /* counts in flight */
    struct emb_xfer xf[EMB_NX];
    int rmade[2];              /* chunk k's rows are in rows (decoded, rebuilt) */
    int hold;                  /* emb_output_hold: chunk 1 leaves after chunk 0 */
    int held;                  /* chunk 1's rows gathered, not yet posted */
    int gposted[2];
    /* t: the buffers, kept across uses */
    struct emb_buf b_uniq, b_inv, b_serve, b_served, b_rows, b_cw, b_gu, b_gk, b_gs;
    struct emb_buf b_served_w, b_rows_w, b_gu_w, b_gs_w, b_sid, b_sg, b_bad;
    struct emb_buf b_xg, b_xs;  /* exact sums (emb_exact.c) */
    struct backend_event *freed; /* device: the compute stream's work up to the last release
                                    (every use of the buffers), recorded when freed_set */
    int freed_set;
    int64_t *uniq;             /* t [nuniq] grouped by owner, chunk 0 first */
    int64_t *inverse;          /* t [n] token -> index in uniq */
    int64_t *serve;            /* t [nserve] grouped by requester */
    float *served;             /* t [nserve, width] rows on their way out */
    float *rows;               /* t [nuniq, dim] rows of uniq */
    float *cw;                 /* a subspace table's c[i] received [nuniq, k] */
    float *gu;                 /* t [nuniq, dim] gradients per unique row */
    float *gk;                 /* a subspace table's U^T g [nuniq, k] */
    float *gs;                 /* t [nserve, width] gradients received */
    uint8_t *served_w, *rows_w, *gu_w, *gs_w; /* t encoded rows / gradients */
    uint64_t *bad;             /* t [2] rows / gradients a codec refused (backend.h) */
    int64_t *xg;               /* exact sums: [nuniq, dim][EXACT_LIMBS] the rows' gradients */
    int64_t xbad;              /* their contributions out of range */
    struct emb_pf *pf;         /* parallel.overlap = prefetch: its state, kept across uses
                                  (emb_prefetch.c); pf_on: this use's rows come by it */
    int pf_on;
    int dyn_mapped;            /* a dynamic table: serve holds virtual ids (emb_dyn_map) */
    int dyn_shared;            /* ... of which may be the unadmitted row (emb_dyn_map_shared) */
    int cache_mapped;          /* a cached table: serve holds virtual ids (emb_cache_map) */
    const float *crows;        /* ... of a read-through lookup: the rows it gathers from
                                  (NULL: t->w) */
};

/* Chunk k's counts and displacements, in units of `scale` (1: ids, dim:
 * floats), on both sides: the requester's part of its unique rows towards
 * owner p (req_c, req_d) and the owner's part of the rows it serves to
 * requester p (own_c, own_d); each [G]. Rows travel own -> req, gradients
 * req -> own. The one place the two-chunk layout is computed. */
void emb_chunk_layout(const struct emb_exchange *x, int k, int64_t scale, int64_t *req_c,
                      int64_t *req_d, int64_t *own_c, int64_t *own_d);

/* Block until the ids have arrived at their owners (emb_exchange.c). */
void emb_input_wait(struct comm *c, struct emb_exchange *x);
/* The same, then (a dynamic table) the served ids made virtual ids once:
 * before the owner reads rows (emb_dyn_map). */
void emb_input_serve(struct comm *c, struct emb_exchange *x);
/* Count a lookup in the table's wire figures when its rows leave. */
void emb_count_lookup(struct emb_table *t, struct emb_exchange *x);
/* A prefetched exchange's rows: wait for both parts and lay them out as
 * emb_output_post's would be (emb_prefetch.c); release its state. */
void emb_prefetch_wait(struct emb_exchange *x);
void emb_prefetch_release(const struct backend_ops *be, struct emb_pf *pf);

/* Encode rows[n, width] (table memory) into wire with codec cd on the
 * table's backend; a row the codec refuses is noted in x->bad[which] (0:
 * rows, 1: gradients), and on a host table reported at once. */
void emb_wire_encode(struct emb_exchange *x, enum emb_codec cd, int64_t n, int width,
                     const float *rows, uint8_t *wire, int which);
/* End the job naming the table and the id when a codec refused a row of
 * this exchange: host tables at every encode; device tables when the
 * exchange is released (the flags read back: one host wait, only with a
 * lossy codec). */
void emb_codec_check(struct emb_exchange *x, int which);

#endif
