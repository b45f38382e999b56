/* OTP's DTrace/SystemTap probes and what beamtrace provides for each, as C
 * data expanded from usdt.def (for `beamtrace list --usdt` and the docs).
 * Pure C, immutable. */
#ifndef BMT_USDT_CATALOGUE_H
#define BMT_USDT_CATALOGUE_H

enum bmt_usdt_status {
    BMT_USDT_PROVIDED, /* fired with OTP's arguments */
    BMT_USDT_APPROX,   /* fired, with a stated approximation */
    BMT_USDT_NUMBERED, /* provided, one probe per label */
    BMT_USDT_NONE,     /* not derivable on a stock VM */
};

struct bmt_usdt_probe {
    const char *name;      /* DTrace spelling, e.g. "process-spawn" */
    enum bmt_usdt_status status;
    const char *source;    /* what fires it */
    const char *arguments; /* OTP's argument list */
    const char *note;      /* the approximation, or why it cannot be */
};

extern const struct bmt_usdt_probe bmt_usdt_catalogue[];
extern const unsigned bmt_usdt_count;

/* "provided", "approximated" or "not available". */
const char *bmt_usdt_status_name(enum bmt_usdt_status status);

#endif
