/* What reader.c and reader_open.c share, and nothing else uses. */
#ifndef BMT_CLI_READER_PRIV_H
#define BMT_CLI_READER_PRIV_H

#include "reader.h"

#define NS_PER_S 1000000000ull

/* Formats "<what is wrong>; <how to fix>" into r->error and returns rc. */
int bmt_reader_fail(struct bmt_reader *r, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
