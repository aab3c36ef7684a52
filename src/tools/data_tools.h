/* data_tools: the 'freescale data' subcommands. Each takes the arguments
 * after its name (argv[0] = subcommand name), runs serially without MPI,
 * and returns the process exit status; user errors end in fatal(). */
#ifndef FS_DATA_TOOLS_H
#define FS_DATA_TOOLS_H

int data_import_main(int argc, char **argv);
int data_gen_main(int argc, char **argv);
int data_stats_main(int argc, char **argv);
int data_check_main(int argc, char **argv);

struct dataset;
/* The feature lines of data stats, every value checked (data_stats_feat.c). */
void data_stats_features(const struct dataset *ds);

#endif
