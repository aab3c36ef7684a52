/* guard: the divergence guard; see guard.h. */
#include "train/guard.h"

#include <math.h>
#include <time.h>

#include "base/check.h"
#include "train/bias_rows.h"

/* The step being run, numbered as in the progress lines (from 1). */
static int64_t step_number(const struct trainer *tr) { return tr->step + 1; }

static int injected(const struct trainer *tr, int64_t step)
{
    return tr->conf.nan_step > 0 && step == tr->conf.nan_step && !tr->conf.nan_sparse &&
           !tr->conf.nan_bias;
}

/* What skip_now says was not finite. */
enum { SKIP_NONE, SKIP_LOSS, SKIP_DENSE, SKIP_SPARSE, SKIP_BIAS };

void guard_inject_sparse(struct trainer *tr, const struct backend_ops *be, float *gu, int64_t n)
{
    const struct train_conf *cf = &tr->conf;
    if (cf->nan_sparse && cf->nan_step == step_number(tr) && tr->c->rank == 0 && n > 0) {
        float *g = backend_host_begin(be, gu, sizeof *gu, 0); /* debug.nan_in = sparse */
        g[0] = NAN;
        backend_host_end(be, gu, g, sizeof *gu, 1);
    }
}

int guard_before_update(struct trainer *tr, double loss_sum, double sparse_sq)
{
    if (!tr->conf.nonfinite_skip)
        return 1; /* stop: guard_after_step looks */
    const int loss_ok = !injected(tr, step_number(tr)) && isfinite(loss_sum);
    /* one all-reduce tells both: NaN = a loss was not finite, +inf = only
     * sparse gradients were */
    double local = !loss_ok ? NAN : !isfinite(sparse_sq) ? INFINITY : loss_sum;
    double global = comm_allreduce_sum_f64(tr->c, COMM_DP, local);
    tr->skip_now = isnan(global) ? SKIP_LOSS : !isfinite(global) ? SKIP_SPARSE : SKIP_NONE;
    return !tr->skip_now;
}

int guard_dense_ok(struct trainer *tr, double dense_sq)
{
    if (!tr->conf.nonfinite_skip)
        return 1;
    if (!tr->skip_now && !isfinite(dense_sq))
        tr->skip_now = SKIP_DENSE; /* the sparse rows had finite gradients and were updated */
    return !tr->skip_now;
}

int guard_bias_ok(struct trainer *tr)
{
    const struct train_conf *cf = &tr->conf;
    if (!tr->bias)
        return 1;
    int64_t n;
    float *g = bias_rows_owned_grads(tr->bias, &n);
    if (cf->nan_bias && cf->nan_step == step_number(tr) && tr->c->rank == 0 && n > 0)
        g[0] = NAN; /* debug.nan_in = bias */
    int ok = 1;
    for (int64_t i = 0; i < n && ok; i++)
        ok = isfinite(g[i]);
    if (!cf->nonfinite_skip) {
        if (!ok)
            fatal("step %lld: the gradients of the model.bias rows this rank owns are not finite "
                  "(train.nonfinite = stop): training diverged; the state of this step was not "
                  "saved (lower train.lr, set train.clip_norm, or train.nonfinite = skip)",
                  (long long)step_number(tr));
        return 1;
    }
    if (tr->skip_now) /* the same on every rank */
        return 0;
    if (comm_allreduce_sum_f64(tr->c, COMM_DP, ok ? 0.0 : 1.0) > 0)
        tr->skip_now = SKIP_BIAS;
    return !tr->skip_now;
}

/* The first tensor of the dense gradient that is not finite (NULL: none). */
static const char *first_nonfinite_grad(const struct trainer *tr)
{
    if (isfinite(tr->be->sum_squares(tr->m.ngrad, tr->m.grad)))
        return NULL;
    for (int i = 0; i < tr->m.nparams; i++) {
        const struct dense_tensor *t = &tr->m.params[i];
        if (!isfinite(tr->be->sum_squares(t->n, t->g)))
            return t->name;
    }
    return "(padding of the gradient arena)";
}

/* Every rank sees the same global loss and dense gradient, so every rank
 * stops; rank 0 says why (its fatal() ends the job), the others follow a
 * moment later only if rank 0 did not (then they say it themselves). */
static void quiet_unless_rank0(const struct trainer *tr)
{
    struct timespec ts = {2, 0};
    if (tr->c->rank != 0)
        while (nanosleep(&ts, &ts) != 0)
            ;
}

void guard_after_step(struct trainer *tr, double *loss, double sparse_sq, double dense_sq)
{
    const int64_t step = tr->step; /* counted: the step just run */
    if (injected(tr, step))
        *loss = NAN;
    if (tr->conf.nonfinite_skip) {
        if (tr->skip_now) {
            tr->skipped++;
            const char *what = tr->skip_now == SKIP_DENSE    ? "the dense gradient is"
                               : tr->skip_now == SKIP_SPARSE ? "an embedding gradient is"
                               : tr->skip_now == SKIP_BIAS   ? "a model.bias row's gradient is"
                                                             : "the loss is";
            if (tr->c->rank == 0)
                log_warn("step %lld: %s not finite: its update was dropped (train.nonfinite = "
                         "skip; %lld step%s skipped so far)",
                         (long long)step, what, (long long)tr->skipped,
                         tr->skipped == 1 ? "" : "s");
        }
        tr->skip_now = 0;
        return;
    }
    /* the loss is global: every rank alike; a rank's embedding gradients:
     * that rank says so (its fatal() ends the job) */
    if (isfinite(*loss) && !isfinite(sparse_sq))
        fatal("step %lld: the embedding gradients of the rows this rank looked up are not "
              "finite (train.nonfinite = stop): training diverged; the state of this step "
              "was not saved (lower embedding.lr or train.lr, or train.nonfinite = skip)",
              (long long)step);
    const char *bad = isfinite(*loss) && !isfinite(dense_sq) ? first_nonfinite_grad(tr) : NULL;
    if (!isfinite(*loss) || bad)
        quiet_unless_rank0(tr);
    if (!isfinite(*loss))
        fatal("step %lld: the loss is %g (train.nonfinite = stop): training diverged; the "
              "state of this step was not saved (lower train.lr, set train.clip_norm, or "
              "train.nonfinite = skip)", (long long)step, *loss);
    if (bad)
        fatal("step %lld: the dense gradient of %s is not finite (train.nonfinite = stop): "
              "training diverged; the state of this step was not saved (lower train.lr, set "
              "train.clip_norm, or train.nonfinite = skip)", (long long)step, bad);
}
