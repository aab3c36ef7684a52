/* comm_progress: the progress thread of parallel.progress = thread (see
 * comm.h): part of the comm module, the only one that calls MPI. */
#include "comm/comm.h"

#include <mpi.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "comm/comm_priv.h"

/* Open MPI moves the bytes of a non-blocking collective only inside MPI
 * calls. With the thread, MPI_Iprobe (which runs the progress engine) is
 * called every PROGRESS_POLL_US while the main thread computes. The main
 * thread holds g_progress.lock except inside comm_compute_begin/end, so only
 * one thread is ever inside MPI (MPI_THREAD_SERIALIZED). */
#define PROGRESS_POLL_US 20

static struct {
    pthread_t thread;
    pthread_mutex_t lock;
    int running, stop;
    MPI_Comm comm;
} g_progress = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void *progress_main(void *arg)
{
    (void)arg;
    struct timespec nap = {0, PROGRESS_POLL_US * 1000L};
    for (;;) {
        pthread_mutex_lock(&g_progress.lock);
        if (g_progress.stop) {
            pthread_mutex_unlock(&g_progress.lock);
            return NULL;
        }
        int flag;
        MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, g_progress.comm, &flag, MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&g_progress.lock);
        nanosleep(&nap, NULL);
    }
}

int comm_progress_start(struct comm *c, char *err, size_t errlen)
{
    if (g_progress.running)
        return 0;
    if (!c->thread_level_ok)
        return errorf(err, errlen, "this MPI does not provide MPI_THREAD_SERIALIZED, which a "
                                   "progress thread needs");
    MPI_CHECK(MPI_Comm_dup(*(MPI_Comm *)c->g[COMM_WORLD].mpi, &g_progress.comm));
    g_progress.stop = 0;
    pthread_mutex_lock(&g_progress.lock); /* held by the main thread outside compute */
    int rc = pthread_create(&g_progress.thread, NULL, progress_main, NULL);
    if (rc != 0) {
        pthread_mutex_unlock(&g_progress.lock);
        return errorf(err, errlen, "cannot start the progress thread: %s", strerror(rc));
    }
    g_progress.running = 1;
    return 0;
}

void comm_progress_stop(struct comm *c)
{
    (void)c;
    if (!g_progress.running)
        return;
    g_progress.stop = 1; /* written under the lock the main thread holds */
    pthread_mutex_unlock(&g_progress.lock);
    pthread_join(g_progress.thread, NULL);
    g_progress.running = 0;
    MPI_CHECK(MPI_Comm_free(&g_progress.comm));
}

void comm_compute_begin(void)
{
    if (g_progress.running)
        pthread_mutex_unlock(&g_progress.lock);
}

void comm_compute_end(void)
{
    if (g_progress.running)
        pthread_mutex_lock(&g_progress.lock);
}
