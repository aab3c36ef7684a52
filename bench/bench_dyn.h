/* bench_dyn: the benchmark of one shard of a dynamic table; the
 * HierarchicalKV-format table (bench_dyn_hkv.c: bench/bench_dyn --hkv). */
#ifndef FS_BENCH_DYN_H
#define FS_BENCH_DYN_H

/* The options after --hkv (argv[0 .. argc)): prints the table; the exit
 * status (2: a bad option). */
int bench_dyn_hkv(int argc, char **argv);

#endif
