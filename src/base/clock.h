/* clock: the one wall clock of the program (phase timers, throughput,
 * benchmarks). */
#ifndef FS_BASE_CLOCK_H
#define FS_BASE_CLOCK_H

/* Elapsed wall seconds since an arbitrary origin (monotonic). */
double clock_seconds(void);

#endif
