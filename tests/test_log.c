/* test_log: a warning reaches stderr in one write, so that the lines of
 * ranks sharing a terminal or a pipe do not interleave (base/log.c). stderr
 * is a SOCK_SEQPACKET socket here: each write is one message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/log.h"

static int g_rd = -1, g_saved = -1;

static int setup(void **state)
{
    (void)state;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) != 0)
        return -1;
    fflush(stderr);
    g_saved = dup(STDERR_FILENO);
    if (g_saved < 0 || dup2(sv[1], STDERR_FILENO) < 0)
        return -1;
    close(sv[1]);
    g_rd = sv[0];
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    fflush(stderr);
    dup2(g_saved, STDERR_FILENO);
    close(g_saved);
    close(g_rd);
    return 0;
}

/* The next message written to stderr (one write), NUL-terminated. */
static size_t next_write(char *buf, size_t len)
{
    ssize_t n = recv(g_rd, buf, len - 1, 0);
    assert_true(n > 0);
    buf[n] = 0;
    return (size_t)n;
}

static void test_one_write(void **state)
{
    (void)state;
    char buf[8192];
    log_set_rank(0, 1);
    log_warn("a warning of %d words", 5);
    next_write(buf, sizeof buf);
    assert_string_equal(buf, "freescale: warning: a warning of 5 words\n");
    log_set_rank(2, 3);
    log_warn("%s", "on a rank");
    next_write(buf, sizeof buf);
    assert_string_equal(buf, "freescale: warning [rank 2]: on a rank\n");
    log_set_rank(0, 1);
}

/* A line longer than the buffer is cut, still one write ending in '\n'. */
static void test_long_line(void **state)
{
    (void)state;
    char big[5000], buf[8192];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = 0;
    log_warn("%s", big);
    size_t n = next_write(buf, sizeof buf);
    assert_true(n > 1000 && n < sizeof big);
    assert_int_equal(buf[n - 1], '\n');
    assert_int_equal(strncmp(buf, "freescale: warning: xxx", 23), 0);
    assert_null(memchr(buf, '\n', n - 1));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_write),
        cmocka_unit_test(test_long_line),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
