/* comm_fail: errors agreed by all ranks; see comm_fail.h. */
#include "comm/comm_fail.h"

#include <setjmp.h>
#include <stdlib.h>

#include "base/check.h"
#include "base/log.h"

void comm_fail_agree(struct comm *c, int failed, const char *err)
{
    /* the lowest failing rank: size - max(size - rank) */
    const int64_t first = comm_allreduce_max_i64(c, failed ? (int64_t)(c->size - c->rank) : 0);
    if (first == 0)
        return;
    const int who = c->size - (int)first;
    char *msg = who == c->rank ? xstrdup(err && err[0] ? err : "(no message)") : NULL;
    comm_bcast_string(c, &msg, who);
    if (c->rank == 0)
        log_error(who == 0 ? -1 : who, msg);
    free(msg);
    log_run_abort_hooks();
    comm_free(c);
    exit(1);
}

void comm_fail_run(struct comm *c, void (*fn)(void *arg), void *arg)
{
    struct log_catch k;
    k.msg[0] = '\0';
    struct log_catch *was = log_catch_set(NULL);
    volatile int failed = 0;
    if (setjmp(k.jb) == 0) {
        log_catch_set(&k);
        fn(arg);
    } else {
        failed = 1;
    }
    log_catch_set(was);
    comm_fail_agree(c, failed, k.msg);
}
