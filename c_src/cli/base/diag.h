/* Diagnostic lines on stderr: every error and warning the command prints
 * is one line, whatever a file name or a corrupt trace puts in it.
 *
 * Below every other layer: the reader (ctf/) warns through it, the
 * commands report their errors through it. Single-threaded (stderr).
 */
#ifndef BMT_CLI_DIAG_H
#define BMT_CLI_DIAG_H

#include <stdarg.h>

/* Exit statuses of every command. */
enum {
    BMT_EXIT_OK = 0,
    BMT_EXIT_FAIL = 1,  /* malformed trace, I/O error */
    BMT_EXIT_USAGE = 2, /* unknown command or option, bad argument */
};

/* Prints `prefix` then the formatted message as one line on stderr:
 * control characters (from file names or corrupt traces) become '?'. The
 * message is cut at 2047 bytes. */
void bmt_cli_line(const char *prefix, const char *fmt, va_list ap);
void bmt_cli_error_line(const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prints one line "beamtrace: <message>" to stderr. */
void bmt_cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Prints one line "beamtrace: <cmd>: <message>; run 'beamtrace <cmd> --help'
 * for usage" to stderr and returns BMT_EXIT_USAGE. */
int bmt_cli_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
