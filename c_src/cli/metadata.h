/* What the CLI needs from a trace's TSDL metadata, and the parser that gets
 * it.
 *
 * This is not a general TSDL parser: it reads the metadata beamtrace writes
 * (ctf_metadata.c) and rejects anything else with a message naming what
 * differs, so the binary reader can trust the event layouts it is given.
 * It tokenizes (comments, strings with escapes, `:=`) and looks only at the
 * `trace`, `env`, `clock` and `event` blocks; other declarations are skipped
 * by brace matching. Pure function of its input; no globals.
 */
#ifndef BMT_CLI_METADATA_H
#define BMT_CLI_METADATA_H

#include "ctf.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_META_NO_EVENT 0xffffu
#define BMT_META_ERROR_BYTES 512

struct bmt_meta {
    uint8_t uuid[BMT_CTF_UUID_BYTES];
    int has_uuid;
    char hostname[256];      /* env.hostname, unescaped */
    int has_hostname;
    int64_t clock_offset_s;  /* clock offset_s: seconds from the epoch to clock zero */
    int64_t clock_offset_ns; /* clock offset, in cycles of a 1 GHz clock = ns */
    uint16_t *id_map;        /* 65536 entries: event id -> catalogue id, or BMT_META_NO_EVENT */
    unsigned event_count;    /* event blocks read */
};

/* Parses `len` bytes of metadata text into `m` (which it initialises; free
 * with bmt_meta_free even on failure). Returns 0, -EINVAL with a message
 * "<what is wrong>; <how to fix>" in `err` (BMT_META_ERROR_BYTES bytes), or
 * -ENOMEM. */
int bmt_meta_parse(struct bmt_meta *m, const char *text, size_t len, char *err);

/* Releases what bmt_meta_parse allocated. Safe on a zeroed struct. */
void bmt_meta_free(struct bmt_meta *m);

#endif
