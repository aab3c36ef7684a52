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
 *   - links: per GPU, inter-node bandwidth and latency (--net BW[,LAT]),
 *     intra-node bandwidth (--intra BW); each exchange phase costs its
 *     bytes over the links plus (P - 1) latencies (one message per peer),
 *     the all-reduce 2 (steps) latencies per ring step;
 *   - compute: the slowest rank's and the mean rank's model work per step
 *     from the balance simulation (the cost model in microseconds, as
 *     'freescale calibrate' prints it, or FLOPs over --gflops), split into
 *     forward (1/3) and backward (2/3) as the FLOP model counts them.
 * Exposure per mode (doc/overlap.md for what each mode overlaps):
 *   none         rows + grads + dense
 *   prioritized  the input rows (a share 1 / (2 + negatives) of the rows'
 *                bytes: the input item and its target and negatives travel
 *                as one token's rows) + the rest of the rows beyond the
 *                forward + grads and dense beyond the backward
 *   prefetch     the next step's rows (all but the collision share) and
 *                this step's gradients beyond the backward, + the dense
 *                all-reduce and the late rows (which travel together)
 * and of what a mode could hide, only the share --hide H (default 1) is
 * hidden: H < 1 says how much a machine's MPI progress actually overlaps
 * (calibrated on a measured run: doc/scaling.md). */
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
    double collision;        /* prefetch: the share of rows that come late */
    double hide;             /* of the overlappable communication, hidden */
    const char *exchange;    /* the measured run's metrics file */
    int exchange_ranks;
    double exchange_per_rank; /* its sequences per rank and step */
};

/* One rank count's prediction, milliseconds per step. */
struct plan_net_row {
    double compute_ms, bubble_ms, rows_ms, grads_ms, dense_ms;
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
