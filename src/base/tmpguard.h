/* tmpguard: the temporary output a process is writing (PATH.tmp.PID,
 * renamed into place once complete), removed when the process ends before
 * it is committed: through fatal() or the watchdog (an abort hook, log.h),
 * at exit, and, when asked, on SIGTERM, SIGINT and SIGHUP (what a launcher
 * sends the other ranks of an aborted job; not for the trainer, whose
 * preemption handler owns SIGTERM). Only a SIGKILL can leave it behind.
 * One temporary at a time per process. */
#ifndef FS_TMPGUARD_H
#define FS_TMPGUARD_H

/* Guard tmp (fatal() if another is guarded). on_signals: also on the
 * signals above (their handlers stay installed). */
void tmpguard_begin(const char *tmp, int on_signals);
/* The guarded temporary was renamed into place or removed by the caller. */
void tmpguard_end(void);

#endif
