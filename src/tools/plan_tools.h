/* plan_tools: the load-balance tools 'freescale plan' (plan.c: predicted
 * bubbles of each balance mode at many rank counts) and 'freescale
 * calibrate' (calibrate.c: fit the cost model c(L) = c0 + a L + b L^2 to
 * timed forward and backward passes). Each takes the arguments after the
 * command name (argv[0] = "plan" / "calibrate"), runs serially without
 * MPI, and returns the exit status; user errors end in fatal(). */
#ifndef FS_PLAN_TOOLS_H
#define FS_PLAN_TOOLS_H

int plan_main(int argc, char **argv);
int calibrate_main(int argc, char **argv);

#endif
