/* log: rank-aware logging and the single fatal() exit path.
 *
 * log_info    rank 0 only, to stdout ("freescale: ..." prefix omitted).
 * log_warn    every rank, to stderr, prefixed with the rank.
 * fatal       every rank that calls it: prints "freescale: error [rank R]: ..."
 *             to stderr, runs the abort hooks and aborts the whole job
 *             (the job abort comm installs: MPI_Abort), or exits 1 in a job
 *             of one process (serial tools, which never print MPI's text).
 *             An error that every rank meets alike ends the job through
 *             comm_fail_agree (comm/comm_fail.h) instead: one message, no
 *             MPI_Abort.
 * log_error   the error line of fatal(): rank >= 0 names the rank.
 * log_at_abort  a hook that fatal() and the watchdog (whose abort skips the
 *             exit handlers) run before the job ends: removing a temporary
 *             output, say. Hooks may run on another thread than the one
 *             that registered them: async-signal-safe calls only.
 * Before MPI starts (argument parsing) in a job of several processes, the
 *             launcher's rank variables (OMPI_COMM_WORLD_RANK, PMIX_RANK,
 *             PMI_RANK; not SLURM_PROCID, which srun also sets for tasks
 *             that are no MPI job) pick rank 0 alone to print fatal()'s
 *             line: every process parses the same arguments and exits 1.
 * log_catch   while set (this thread), fatal() writes its message into the
 *             catch and jumps back (longjmp) to where the catch was set
 *             instead of ending the job: comm_fail_run's use, which then
 *             agrees on the error with the other ranks (comm/comm_fail.h). */
#ifndef FS_LOG_H
#define FS_LOG_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

void log_set_rank(int rank, int size);
/* The abort of a whole job that fatal() calls in a job of more than one
 * process (comm_init installs comm_abort; base never calls comm). */
void log_set_job_abort(void (*fn)(int code));
int log_rank(void);
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Errors first: from log_hold() on, log_info's lines are held in memory
 * instead of printed; log_release() prints them (and stops holding; exit
 * does too), log_error() drops them, so that an error of a command's
 * set-up is the first thing it prints (README, "Errors"). Warnings go to
 * stderr at once. */
void log_hold(void);
void log_release(void);
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* While muted (log_mute(1) .. log_mute(0)), log_info's lines are dropped:
 * train.tune's candidates, each a trainer of its own, say only their
 * result, not the set-up the run says once. */
void log_mute(int on);
/* From log_keep(buf, len) to log_keep(NULL, 0), log_info's lines (rank
 * 0's, muted or not) are also kept in buf, each ended by a newline, while
 * they fit: a choice that a later trainer takes says what its making said
 * (struct bias_choice, train/train.h). */
void log_keep(char *buf, size_t len);
/* From log_dedupe(1) to log_dedupe(0), a warning this thread printed in
 * that span is not printed again (train.tune's trainers and the run's,
 * opened from the same parameters, warn alike: once). */
void log_dedupe(int on);
/* bytes with a decimal unit ("512 B", "12.3 kB", "612.0 MB") into buf; returns buf. */
const char *log_bytes(double bytes, char *buf, size_t len);
/* Format an error for the caller into err[errlen]; returns -1, so that
 * modules can write "return errorf(err, errlen, ...);". */
int errorf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void log_error(int rank, const char *msg);
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void vfatal(const char *fmt, va_list ap) __attribute__((noreturn));
/* fatal() caught: jb set by setjmp in the frame that stays live, msg the
 * message once it jumped. */
struct log_catch {
    jmp_buf jb;
    char msg[4096];
};
/* Set (k) or clear (NULL) this thread's catch; returns the previous one. */
struct log_catch *log_catch_set(struct log_catch *k);
/* Register fn (at most 8 hooks; a repeated fn once). */
void log_at_abort(void (*fn)(void));
/* Run the hooks (fatal() and the watchdog call it). */
void log_run_abort_hooks(void);

#endif
