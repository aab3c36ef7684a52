/* plan_net: the network model of 'freescale plan --net' (doc/scaling.md).
 *
 * Per step and rank at P ranks, G per node (weak scaling), it predicts the
 * step time as compute + bubble + exposed communication, for each
 * parallel.overlap mode, from:
 *   - the exchange's own counting: bytes of rows and gradients per token
 *     that a rank sends or receives when every row it looks up is remote,
 *     from the metrics of a measured run at P0 ranks (--exchange FILE,
 *     --exchange-ranks P0: (rows_bytes + grads_bytes) / tokens per step x
 *     P0 / (P0 - 1), which holds for the same sequences per rank: the
 *     de-duplication within a rank's batch depends on its size, and a
 *     warning says when --batch-per-rank differs by more than 10%); at P a
 *     fraction (P - 1) / P of a rank's rows is
 *     remote (owners by hash), (P - G) / (P - 1) of that on other nodes;
 *   - the dense all-reduce: the model's gradient arena (fp32 bytes),
 *     hierarchical: a ring within the node over the intra-node links, then
 *     a ring across the nodes of 1/G of it per GPU over the inter-node link;
 *   - the ids: 8 bytes per requested row, a share of the rows' bytes: the
 *     measured run's xsent_ids / xsent_rows (its bytes to other nodes) when
 *     its metrics have them, else 8 / (4 model.dim);
 *   - links: per GPU, inter-node bandwidth and latency (--net BW[,LAT]),
 *     intra-node bandwidth (--intra BW); a share --eff E (default 1) of the
 *     inter-node bandwidth carries payload (framing, the transport's
 *     efficiency); each message set (one message per peer: the ids, each
 *     chunk of rows, the gradients) costs its bytes over the links plus
 *     (P - 1) latencies, the all-reduce 2 (steps) latencies per ring step;
 *     E and LAT are the model's two terms fitted once, from measured runs
 *     across node counts (bench/scaling.sh fits them on the none runs);
 *   - compute: the slowest rank's and the mean rank's model work per step
 *     from the balance simulation (the cost model in microseconds, as
 *     'freescale calibrate' prints it, or FLOPs over --gflops), split into
 *     forward F, backward B and host work H (reading, the owners' gathers,
 *     the sparse update, the optimizer) by --split SF,SB (shares of it;
 *     default 1/3,2/3 as the FLOP model counts the model's work, H = 0).
 * Exposure per mode, per phase: what runs behind compute exposes only its
 * excess, max(0, wire - compute), on one FIFO link per direction (doc/
 * overlap.md, "The bound", is the same model on the measured bytes):
 *   none         ids + rows + grads + dense (each where it is needed)
 *   prioritized  chunk 0 (the input rows: a share 1 / (2 + negatives) of
 *                the rows' bytes, a token's input row beside its target's
 *                and negatives') + max(0, chunk 1 - F) + max(0, the next
 *                step's ids + grads + dense - B)
 *   prefetch     max(0, the next step's ids - F) + max(0, grads - B) +
 *                max(0, the next step's rows ahead (all but the collision
 *                share) + the late rows - H - what the gradients left of
 *                B) (the best order: the gradients first) + the dense
 *                all-reduce (in one piece, after the update)
 * and of what a mode could hide (none's exposure less the mode's), only
 * the share --hide H (default 1) is hidden. */
#ifndef FS_PLAN_NET_H
#define FS_PLAN_NET_H

#include <stdint.h>

#define PLAN_NET_MODES 3 /* none, prioritized, prefetch */

struct plan_net {
    int on;
    double inter_Bps, intra_Bps, latency_s; /* bytes/s per GPU, seconds */
    int gpus_per_node;
    double gflops;           /* > 0: the cost model counts FLOPs; else microseconds */
    double bytes_per_token;  /* rows + grads when every row is remote */
    double dense_bytes;      /* the all-reduced gradient arena */
    double input_share;      /* of the rows' bytes: the input rows */
    double ids_share;        /* ids' bytes per byte of rows */
    double eff;              /* of the inter-node bandwidth, the payload's share */
    double fwd_share, bwd_share; /* of the compute, the forward's and the backward's */
    double collision;        /* prefetch: the share of rows that come late */
    double hide;             /* of the overlappable communication, hidden */
    const char *exchange;    /* the measured run's metrics file */
    int exchange_ranks;
    double exchange_per_rank; /* its sequences per rank and step */
};

/* One rank count's prediction, milliseconds per step. */
struct plan_net_row {
    double compute_ms, bubble_ms, rows_ms, grads_ms, dense_ms, ids_ms;
    double exposed_ms[PLAN_NET_MODES], step_ms[PLAN_NET_MODES];
    double inter_bytes, intra_bytes; /* per rank and step, rows + grads */
};

/* "400gbit", "50GB", "1e9" (bytes/s; bit units / 8) for option `what`;
 * fatal() naming it otherwise. */
double plan_net_rate(const char *what, const char *text);
/* "--net BW[,LAT]": LAT "5us", "0.1ms", "2e-6" (seconds). */
void plan_net_parse_net(struct plan_net *n, const char *text);
/* Read the measured run's bytes per token from n->exchange (JSON lines of
 * 'train' events); fatal() naming the file and line on a bad one. */
void plan_net_read_exchange(struct plan_net *n);
/* The prediction at P ranks: T and mean, the slowest and the mean rank's
 * model work per step in cost units; tokens per rank and step. */
void plan_net_predict(const struct plan_net *n, int P, double T, double mean, double tokens,
                      struct plan_net_row *r);
const char *plan_net_mode_name(int m);

#endif
