/* comm_trace: the per-peer trace of labelled point-to-point transfers
 * (output.trace_peers, doc/overlap.md "Per-peer trace").
 *
 * A caller that names its next post (comm_trace_label: a table and a kind
 * of transfer, e.g. the embedding rows' chunk 0) gets, per message of it:
 *   post_send / post_recv  when the send or receive was posted,
 *   done_send / done_recv  when this rank saw its request complete (the
 *                          MPI_Testsome or MPI_Waitsome that returned it:
 *                          per request, not per batch),
 * and, through comm_trace_consumed, when the receiver used the transfer
 * (peer -1: every peer's part). MPI says nothing about a posted receive
 * before it completes, so the first byte's arrival is not observable; a
 * completion is seen at the first test or wait after it happened (the
 * model's layers test between them, parallel.progress = test).
 *
 * Off (the default) nothing is recorded and the posts, tests and waits
 * take their untraced paths: one branch each. Times are clock_seconds()
 * (monotonic; one clock for every process of a host, so the nodes of
 * scripts/cluster.sh, which share a kernel, compare directly). */
#ifndef FS_COMM_TRACE_H
#define FS_COMM_TRACE_H

#include <stdint.h>

#include "comm/comm.h"

enum comm_trace_ev { CT_POST_SEND, CT_POST_RECV, CT_DONE_SEND, CT_DONE_RECV, CT_CONSUMED,
                     CT_NEV };

/* Start (on = 1) or stop recording; what was recorded is kept. */
void comm_trace_enable(int on);
/* 1 while recording. */
int comm_trace_on(void);
/* Names of the kinds of transfer (static strings, the same on every rank),
 * for the written trace. */
void comm_trace_kinds(const char *const *names, int n);
const char *comm_trace_kind_name(int kind);
const char *comm_trace_ev_name(enum comm_trace_ev ev);
/* The next comm_post_rows / comm_post_msgs is table `table`'s transfer of
 * kind `kind`; only that one call (the label is cleared by it). */
void comm_trace_label(int table, int kind);
/* This rank consumed transfer (table, kind) now. */
void comm_trace_consumed(int table, int kind);

/* Every rank's events (collective over world), times in microseconds from
 * origin (this rank's clock_seconds() origin). Returns the count of all
 * ranks' events; *ev: [count, COMM_TRACE_FIELDS] doubles (rank, ev, t_us,
 * table, kind, peer as a world rank or -1, bytes), heap, the caller frees.
 * *origins: [P] each rank's origin. Clears the recorded events. */
#define COMM_TRACE_FIELDS 7
int64_t comm_trace_gather(struct comm *c, double origin, double **ev, double **origins);

/* --- for comm.c: the messages of one labelled post ----------------------------- */
struct comm_trace_msgs; /* opaque: per request, its peer, bytes and label */
/* n messages to or from the world ranks of group g's peers m[i].peer, posted
 * now: recorded; the per-request record, or NULL when not tracing or the
 * post is not labelled. */
struct comm_trace_msgs *comm_trace_post(struct comm *c, int g, const struct comm_msg *m, int n,
                                        size_t elem, int send);
/* Request i of t completed (seen now). */
void comm_trace_done(struct comm_trace_msgs *t, int i);
void comm_trace_free(struct comm_trace_msgs *t);

#endif
