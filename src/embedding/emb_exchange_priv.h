/* emb_exchange_priv: the state of one lookup in flight or done, private to
 * the embedding module (emb_exchange.c, emb_backward.c); callers use
 * emb_exchange.h. */
#ifndef FS_EMB_EXCHANGE_PRIV_H
#define FS_EMB_EXCHANGE_PRIV_H

#include "embedding/emb_exchange.h"

enum emb_stage { EMB_IDLE, EMB_COUNTS_POSTED, EMB_COUNTS_DONE, EMB_IDS_POSTED, EMB_IDS_DONE };

/* Unique ids are in two chunks (emb_exchange.h); within each owner's block
 * of uniq, chunk 0 comes first. */
struct emb_exchange {
    struct comm *c;
    int G;
    int64_t n;                 /* tokens */
    int64_t nuniq;             /* unique ids requested */
    int64_t *uniq;             /* [nuniq] grouped by owner, chunk 0 first */
    int64_t *inverse;          /* [n] token -> index in uniq */
    int64_t *scounts, *sdispls, *rcounts, *rdispls; /* [G] ids per peer */
    int64_t *scounts0, *rcounts0; /* [G] of which in chunk 0 */
    struct emb_span *spans;    /* [2G] the requester's rows of chunk 0, then chunk 1 */
    int64_t *cnt;              /* [4G] counts sent and received */
    int64_t nserve;            /* ids this rank serves as owner */
    int64_t *serve;            /* [nserve] grouped by requester */
    float *served;             /* [nserve, dim] rows on their way out */
    float *rows;               /* [nuniq, dim] rows of uniq */
    enum emb_stage stage;      /* of the counts and ids exchange */
    struct comm_request req;   /* counts, then ids, in flight */
    struct comm_request rreq[2]; /* rows of chunk 0 and chunk 1 */
    int rpending[2];
    struct comm_request greq[2]; /* gradients to the owners, per chunk */
    float *gs;                 /* [nserve, dim] gradients received */
    int gposted[2], gpending[2];
    /* wire formats (emb_codec.h): with a codec other than fp32 the rows and
     * gradients travel encoded, as bytes */
    enum emb_codec rcodec, gcodec;
    int dim;
    /* a subspace table (emb_subspace.h): width = k values travel per row;
     * cw [nuniq, k] receives c, gk [nuniq, k] holds U^T g; else width = dim */
    const struct emb_table *tab;
    int width;
    float *cw, *gk;
    int rmade[2];              /* chunk k's rows are in rows (decoded, rebuilt) */
    int counted;               /* counted in the table's wire stats */
    int64_t remote_tokens;     /* tokens owned by another rank (the fp32 figure) */
    uint8_t *served_w;         /* [nserve, row bytes] encoded rows on their way out */
    uint8_t *rows_w;           /* [nuniq, row bytes] encoded rows received */
    uint8_t *gu_w;             /* [nuniq, gradient bytes] encoded gradients sent */
    uint8_t *gs_w;             /* [nserve, gradient bytes] encoded gradients received */
};

/* Chunk k's counts and displacements, in units of `scale` (1: ids, dim:
 * floats), on both sides: the requester's part of its unique rows towards
 * owner p (req_c, req_d) and the owner's part of the rows it serves to
 * requester p (own_c, own_d); each [G]. Rows travel own -> req, gradients
 * req -> own. The one place the two-chunk layout is computed. */
void emb_chunk_layout(const struct emb_exchange *x, int k, int64_t scale, int64_t *req_c,
                      int64_t *req_d, int64_t *own_c, int64_t *own_d);

/* Encode rows[n, width] of ids[n] into wire with codec cd (what: "row"
 * or "gradient"); a row the codec cannot carry ends the job naming the
 * table and the id. */
void emb_wire_encode(const struct emb_table *t, enum emb_codec cd, int64_t n, int width,
                     const float *rows, uint8_t *wire, const int64_t *ids, const char *what);

#endif
