/* export: the 'freescale export' command (run under mpirun): a trained
 * model as plain arrays for NumPy (the file's layout: export.c). Takes the
 * arguments after its name (argv[0] = "export") and returns the exit
 * status; errors end the job with fatal(). */
#ifndef FS_EXPORT_H
#define FS_EXPORT_H

int export_main(int argc, char **argv);

#endif
