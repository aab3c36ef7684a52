/* clock: the one wall clock of the program (phase timers, throughput,
 * benchmarks), and the calling thread's CPU clock (balance_adapt's
 * measure of a rank's compute, which a rank descheduled does not stretch:
 * doc/balance.md). */
#ifndef FS_BASE_CLOCK_H
#define FS_BASE_CLOCK_H

/* Elapsed wall seconds since an arbitrary origin (monotonic). */
double clock_seconds(void);
/* CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID). */
double clock_thread_seconds(void);

#endif
