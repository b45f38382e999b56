/* usdt.def expanded into a table. */
#include "usdt_catalogue.h"

#define USDT(symbol, name, status, source, arguments, note) \
    {name, BMT_USDT_##status, source, arguments, note},
const struct bmt_usdt_probe bmt_usdt_catalogue[] = {
#include "usdt.def"
};
#undef USDT

const unsigned bmt_usdt_count = sizeof bmt_usdt_catalogue / sizeof bmt_usdt_catalogue[0];

const char *bmt_usdt_status_name(enum bmt_usdt_status status)
{
    switch (status) {
    case BMT_USDT_PROVIDED:
    case BMT_USDT_NUMBERED: return "provided";
    case BMT_USDT_APPROX: return "approximated";
    case BMT_USDT_NONE: return "not available";
    }
    return "?";
}
