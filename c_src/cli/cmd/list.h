/* `beamtrace list`'s output forms, and its USDT table (list_usdt.c). */
#ifndef BMT_CLI_LIST_H
#define BMT_CLI_LIST_H

#include "base/out.h"

/* --format's values, in declaration order. */
enum bmt_list_format { BMT_LIST_TEXT, BMT_LIST_JSON, BMT_LIST_MARKDOWN };

/* Prints OTP's DTrace/SystemTap probe table: which beamtrace provides,
 * approximates or cannot derive. */
void bmt_list_usdt(struct bmt_out *o, enum bmt_list_format format);

#endif
