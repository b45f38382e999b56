/* The catalogue tables, expanded from catalogue.def, and name lookup.
 * Immutable data; safe from any thread. */
#include "catalogue.h"

#include <string.h>

/* Field tables: one static array of struct bmt_field per tracepoint. */
#define FIELD_STR(fname, kind, doc) {#fname, BMT_FIELD_STRING, BMT_KIND_##kind, doc},
#define FIELD_U32(fname, doc) {#fname, BMT_FIELD_U32, BMT_KIND_INT, doc},
#define FIELD_U64(fname, doc) {#fname, BMT_FIELD_U64, BMT_KIND_INT, doc},
#define FIELD_S64(fname, doc) {#fname, BMT_FIELD_S64, BMT_KIND_INT, doc},
#define TRACEPOINT(domain, name, flag, summary, fields) \
    static const struct bmt_field fields_##name[] = {fields};
#include "catalogue.def"
#undef TRACEPOINT
#undef FIELD_STR
#undef FIELD_U32
#undef FIELD_U64
#undef FIELD_S64

/* The tracepoint table, indexed by enum bmt_tracepoint_id. */
#define TRACEPOINT(domain, name, flag, summary, fields)                          \
    {#domain, #name, #domain ":" #name, flag, summary,                          \
     sizeof(fields_##name) / sizeof(fields_##name[0]), fields_##name},
const struct bmt_tracepoint bmt_catalogue[BMT_TP_COUNT] = {
#include "catalogue.def"
};
#undef TRACEPOINT

size_t bmt_event_max_bytes(int tp, size_t message_bytes)
{
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    size_t bytes = 10; /* event header: id u16, timestamp u64 */
    for (unsigned i = 0; i < t->field_count; i++) {
        switch (t->fields[i].kind) {
        case BMT_KIND_ID: bytes += BMT_ID_MAX_BYTES + 1; break;
        case BMT_KIND_MFA: bytes += BMT_MFA_MAX_BYTES + 1; break;
        case BMT_KIND_TERM: bytes += BMT_TERM_MAX_BYTES + 1; break;
        case BMT_KIND_MSG: bytes += message_bytes + 1; break;
        case BMT_KIND_WORD: bytes += BMT_WORD_MAX_BYTES + 1; break;
        case BMT_KIND_USER: bytes += BMT_USER_MAX_BYTES + 1; break;
        case BMT_KIND_INT: bytes += t->fields[i].type == BMT_FIELD_U32 ? 4 : 8; break;
        }
    }
    return bytes;
}

int bmt_catalogue_find(const char *full_name)
{
    for (int i = 0; i < BMT_TP_COUNT; i++)
        if (strcmp(bmt_catalogue[i].full_name, full_name) == 0)
            return i;
    return -1;
}

int bmt_glob_match(const char *pattern, const char *text)
{
    /* Iterative glob with single backtrack point: linear enough for names. */
    const char *star = NULL, *resume = NULL;
    while (*text) {
        if (*pattern == '*') {
            star = pattern++;
            resume = text;
        } else if (*pattern == *text) {
            pattern++;
            text++;
        } else if (star) {
            pattern = star + 1;
            text = ++resume;
        } else {
            return 0;
        }
    }
    while (*pattern == '*')
        pattern++;
    return *pattern == '\0';
}

int bmt_catalogue_match(const char *pattern, uint64_t *mask)
{
    int matched = 0;
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        if (bmt_glob_match(pattern, bmt_catalogue[i].full_name)) {
            *mask |= UINT64_C(1) << i;
            matched++;
        }
    }
    return matched;
}
