/* placeholder, replaced by the implementation */
#include "data_tools.h"
#include "log.h"
int data_gen_main(int argc, char **argv) { (void)argc; (void)argv; fatal("placeholder"); }
