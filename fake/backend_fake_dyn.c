/* backend_fake_dyn: the fake device's operations of the dynamic tables
 * (backend.h, "Dynamic tables in the backend's memory"): the CPU's, each
 * launched with its operands translated like those of backend_fake.c, so
 * that a dynamic table's index, statistics and rows live in guarded device
 * memory and the host reaches them only through these and the copies. */
#include "backend/backend_cpu.h"
#include "backend/devstats.h"
#include "fake/fake.h"

#define OP(name) struct fk_op op_; fake_op_begin(&op_, name)
#define IN(p) ((p) = fake_op_arg(&op_, (p), #p))

int64_t fk_emb_dyn_dedup(int64_t n, const int64_t *ids, int64_t n_first, int G, int64_t *uniq,
                         int64_t *inverse, int64_t *counts)
{
    OP("emb_dyn_dedup");
    IN(ids);
    IN(uniq);
    IN(inverse);
    fake_not_device(counts, "emb_dyn_dedup", "counts");
    fake_compute_wait(); /* the host reads the result */
    const int64_t nu = backend_cpu.emb_dyn_dedup(n, ids, n_first, G, uniq, inverse, counts);
    devstats_sync(); /* the counts come back to the host */
    return nu;
}

static void run_dyn_find(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_find(a[0].i, a[1].p, a[2].p, a[3].p, a[4].i, a[5].p);
}

void fk_dyn_find(int64_t n, const int64_t *ids, const int64_t *keys, const int64_t *vals,
                 int64_t cap, int64_t *slot)
{
    OP("dyn_find");
    IN(ids);
    IN(keys);
    IN(vals);
    IN(slot);
    LAUNCH(run_dyn_find, AI(n), AP(ids), AP(keys), AP(vals), AI(cap), AP(slot));
}

static void run_dyn_stamp(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_stamp(a[0].i, a[1].p, a[2].i, a[3].p, a[4].p);
}

void fk_dyn_stamp(int64_t n, const int64_t *slot, int64_t clock, int64_t *last, int64_t *freq)
{
    OP("dyn_stamp");
    IN(slot);
    IN(last);
    IN(freq);
    LAUNCH(run_dyn_stamp, AI(n), AP(slot), AI(clock), AP(last), AP(freq));
}

static void run_dyn_missing(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_missing(a[0].i, a[1].p, a[2].p, a[3].p);
}

void fk_dyn_missing(int64_t n, const int64_t *ids, const int64_t *slot, int64_t *out)
{
    OP("dyn_missing");
    IN(ids);
    IN(slot);
    IN(out);
    LAUNCH(run_dyn_missing, AI(n), AP(ids), AP(slot), AP(out));
}

static void run_dyn_insert(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_insert(a[0].i, a[1].p, a[2].p, (int)a[3].i, a[4].i, a[5].p, a[6].i, a[7].i,
                           a[8].p, a[9].p, a[10].i, a[11].p, a[12].p, a[13].p, a[14].p, a[15].p,
                           a[16].i, a[17].p);
}

void fk_dyn_insert(int64_t k, const int64_t *ids, const float *rows, int width, int64_t nfree,
                   const int64_t *freel, int64_t next, int64_t clock, int64_t *keys,
                   int64_t *vals, int64_t cap, int64_t *sid, int64_t *last, int64_t *freq,
                   float *w, float *state, int64_t state_floats, int64_t *steps)
{
    OP("dyn_insert");
    IN(ids);
    IN(rows);
    IN(freel);
    IN(keys);
    IN(vals);
    IN(sid);
    IN(last);
    IN(freq);
    IN(w);
    IN(state);
    IN(steps);
    LAUNCH(run_dyn_insert, AI(k), AP(ids), AP(rows), AI(width), AI(nfree), AP(freel), AI(next),
           AI(clock), AP(keys), AP(vals), AI(cap), AP(sid), AP(last), AP(freq), AP(w), AP(state),
           AI(state_floats), AP(steps));
}

static void run_dyn_rehash(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_rehash(a[0].p, a[1].p, a[2].i, a[3].p, a[4].p, a[5].i);
}

void fk_dyn_rehash(const int64_t *okeys, const int64_t *ovals, int64_t ocap, int64_t *keys,
                   int64_t *vals, int64_t cap)
{
    OP("dyn_rehash");
    IN(okeys);
    IN(ovals);
    IN(keys);
    IN(vals);
    LAUNCH(run_dyn_rehash, AP(okeys), AP(ovals), AI(ocap), AP(keys), AP(vals), AI(cap));
}

static void run_dyn_expire(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_expire(a[0].i, a[1].i, a[2].i, a[3].p, a[4].p, a[5].p, a[6].p, a[7].i, a[8].p,
                           a[9].p, a[10].p);
}

void fk_dyn_expire(int64_t ttl, int64_t clock, int64_t next, int64_t *sid, const int64_t *last,
                   int64_t *keys, int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone,
                   int64_t *ctl)
{
    OP("dyn_expire");
    IN(sid);
    IN(last);
    IN(keys);
    IN(vals);
    IN(freel);
    IN(gone);
    IN(ctl);
    LAUNCH(run_dyn_expire, AI(ttl), AI(clock), AI(next), AP(sid), AP(last), AP(keys), AP(vals),
           AI(cap), AP(freel), AP(gone), AP(ctl));
}

static void run_dyn_admit(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_admit(a[0].p, a[1].i, a[2].i, a[3].p, a[4].p, a[5].i, a[6].i, a[7].p, a[8].p);
}

void fk_dyn_admit(int64_t *out, int64_t admit, int64_t clock, int64_t *pkeys, int64_t *pvals,
                  int64_t pcap, int64_t prob_max, int64_t *scratch, int64_t *ctl)
{
    OP("dyn_admit");
    IN(out);
    IN(pkeys);
    IN(pvals);
    IN(scratch);
    IN(ctl);
    LAUNCH(run_dyn_admit, AP(out), AI(admit), AI(clock), AP(pkeys), AP(pvals), AI(pcap),
           AI(prob_max), AP(scratch), AP(ctl));
}

static void run_dyn_evict_full(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_evict_full((int)a[0].i, a[1].i, a[2].i, a[3].i, a[4].p, a[5].p, a[6].p,
                               a[7].p, a[8].p, a[9].p, a[10].i, a[11].p, a[12].p, a[13].p,
                               a[14].p);
}

void fk_dyn_evict_full(int lfu, int64_t clock, int64_t next, int64_t top, const int64_t *out,
                       int64_t *sid, const int64_t *last, const int64_t *freq, int64_t *keys,
                       int64_t *vals, int64_t cap, int64_t *freel, int64_t *gone, int64_t *ctl,
                       int64_t *scratch)
{
    OP("dyn_evict_full");
    IN(out);
    IN(sid);
    IN(last);
    IN(freq);
    IN(keys);
    IN(vals);
    IN(freel);
    IN(gone);
    IN(ctl);
    IN(scratch);
    LAUNCH(run_dyn_evict_full, AI(lfu), AI(clock), AI(next), AI(top), AP(out), AP(sid), AP(last),
           AP(freq), AP(keys), AP(vals), AI(cap), AP(freel), AP(gone), AP(ctl), AP(scratch));
}

static void run_dyn_virtual(const union fk_arg *a, const void *blob)
{
    (void)blob;
    backend_cpu.dyn_virtual(a[0].i, a[1].p, a[2].p, a[3].p, a[4].p, a[5].i, (int)a[6].i,
                            (int)a[7].i, (int)a[8].i, a[9].p);
}

void fk_dyn_virtual(int64_t n, int64_t *ids, const int64_t *slot, const int64_t *keys,
                    const int64_t *vals, int64_t cap, int G, int shard, int count, int64_t *acc)
{
    OP("dyn_virtual");
    IN(ids);
    IN(slot);
    IN(keys);
    IN(vals);
    IN(acc);
    LAUNCH(run_dyn_virtual, AI(n), AP(ids), AP(slot), AP(keys), AP(vals), AI(cap), AI(G),
           AI(shard), AI(count), AP(acc));
}
