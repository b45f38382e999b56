/* Kept for ctf/reader.c, which includes it for bmt_cli_line: the error
 * lines and exit statuses are base/diag.h's now (the reader should
 * include that; cmd/ is above ctf/). The commands are declared in
 * options.h and commands.h. */
#ifndef BMT_CLI_H
#define BMT_CLI_H

#include "base/diag.h"

#endif
