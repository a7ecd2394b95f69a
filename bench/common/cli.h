/* cli.h — a bench program's edges: its name on what it says when it
 * stops, and the numbers its options hold.
 *
 * A tool of the measuring half has nothing to save when its input is
 * wrong or its system fails it: it says so on stderr, named, and exits.
 * main() names the program and the status it dies with once
 * (cli_init("ll-report", 1)); die() and die_errno() do the rest. A number
 * from the command line is all of its text, or it is no number.
 */
#ifndef LOCKLAB_BENCH_CLI_H
#define LOCKLAB_BENCH_CLI_H

/* The program's name for its messages, and die()'s exit status. */
void cli_init(const char *prog, int status);

/* "PROG: " and the message on stderr, then exit. */
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

/* "PROG: WHAT: " and strerror(errno) on stderr, then exit. */
void die_errno(const char *what) __attribute__((noreturn));

/* text as a whole decimal number in lo..hi into *v: 0, or -1 (nothing
 * stored) when it is not one. */
int cli_number(const char *text, long long lo, long long hi, long long *v);

/* text as a whole finite real number into *v: 0, or -1. */
int cli_real(const char *text, double *v);

#endif /* LOCKLAB_BENCH_CLI_H */
