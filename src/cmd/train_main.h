/* train_main: 'mpirun -np P freescale train FILE.in [section.key=value ...]'
 * (doc/training.md): trains, validates, checkpoints and tests; the exit
 * code is 0, or PREEMPT_EXIT_CODE after a signal (train/preempt.h). */
#ifndef FS_CMD_TRAIN_MAIN_H
#define FS_CMD_TRAIN_MAIN_H

int train_main(int argc, char **argv);

#endif
