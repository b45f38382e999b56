/* Diagnostic lines (contract in diag.h). */
#include "diag.h"

#include <stdio.h>

void bmt_cli_line(const char *prefix, const char *fmt, va_list ap)
{
    char buf[2048];
    vsnprintf(buf, sizeof buf, fmt, ap);
    /* One line, whatever a file name or a corrupt trace put in the message. */
    for (char *c = buf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    fprintf(stderr, "%s%s\n", prefix, buf);
}

void bmt_cli_error_line(const char *prefix, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bmt_cli_line(prefix, fmt, ap);
    va_end(ap);
}

void bmt_cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    bmt_cli_line("beamtrace: ", fmt, ap);
    va_end(ap);
}

int bmt_cli_usage_error(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    char msg[1024], prefix[64];
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(prefix, sizeof prefix, "beamtrace: %s: ", cmd);
    bmt_cli_error_line(prefix, "%s; run 'beamtrace %s --help' for usage", msg, cmd);
    return BMT_EXIT_USAGE;
}
