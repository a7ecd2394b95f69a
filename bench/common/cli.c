/* cli.c — dying with the program's name, numbers from options (cli.h). */
#include "cli.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *cli_prog = "bench";
static int cli_status = 1;

void cli_init(const char *prog, int status)
{
    cli_prog = prog;
    cli_status = status;
}

void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", cli_prog);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(cli_status);
}

void die_errno(const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", cli_prog, what, strerror(errno));
    exit(cli_status);
}

int cli_number(const char *text, long long lo, long long hi, long long *v)
{
    char *end;
    long long n;

    if (!((text[0] >= '0' && text[0] <= '9') || (text[0] == '-' && text[1] >= '0' && text[1] <= '9')))
        return -1;                            /* no sign but a minus, no blanks */
    errno = 0;
    n = strtoll(text, &end, 10);
    if (errno != 0 || *end != '\0' || n < lo || n > hi)
        return -1;
    *v = n;
    return 0;
}

int cli_real(const char *text, double *v)
{
    char *end;
    double x;

    errno = 0;
    x = strtod(text, &end);
    if (end == text || *end != '\0' || errno != 0 || !isfinite(x))
        return -1;
    *v = x;
    return 0;
}
