/* bench_tools: the 'freescale bench' user tools (run under mpirun). Each
 * takes the arguments after its name (argv[0] = tool name) and returns the
 * exit status; errors end the job with fatal(). */
#ifndef FS_BENCH_TOOLS_H
#define FS_BENCH_TOOLS_H

int bench_exchange_main(int argc, char **argv);

#endif
