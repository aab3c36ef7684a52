/* tmpdir: a cmocka test's scratch folder, made by its group setup and
 * removed by its teardown (tests/tmp.NAME.XXXXXX under the build folder,
 * else /tmp/NAME.XXXXXX). Include once per test program. */
#ifndef FS_TESTS_TMPDIR_H
#define FS_TESTS_TMPDIR_H

#include <stdio.h>
#include <stdlib.h>

static char g_dir[64];

/* 0, or -1 when neither folder could be made. */
static int tmpdir_make(const char *name)
{
    snprintf(g_dir, sizeof g_dir, "tests/tmp.%s.XXXXXX", name);
    if (mkdtemp(g_dir))
        return 0;
    snprintf(g_dir, sizeof g_dir, "/tmp/%s.XXXXXX", name);
    return mkdtemp(g_dir) ? 0 : -1;
}

static int tmpdir_remove(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

#endif
