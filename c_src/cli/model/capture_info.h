/* A flight recorder's capture, as its metadata describes it: the trigger
 * that wrote it (kind, the value that crossed the bound, pid, function or
 * probe label, when) and the window asked for. The recorder writes these
 * in the CTF env block (c_src/recorder/capture.c, docs/flight-recorder.md);
 * `captures` lists them, `calls` marks the triggering call, `report` the
 * trigger on its timeline. Reads only the parsed metadata. Pure.
 */
#ifndef BMT_CLI_CAPTURE_INFO_H
#define BMT_CLI_CAPTURE_INFO_H

#include "ctf/reader.h"

#include <stdint.h>

struct bmt_capture_info {
    uint64_t seq;              /* capture-N's N */
    char kind[32];             /* call, long_gc, probe, ... */
    int64_t value;             /* what crossed the bound, in `unit` */
    int64_t bound;             /* the bound, in `unit` (0: none, e.g. probe) */
    char unit[16];             /* ns, ms, words, messages, or "" */
    char pid[64];              /* the process that fired it, "" if none */
    char function[256];        /* Mod:Fun/Arity, a probe's label, a port, or "" */
    uint64_t trigger_ns;       /* reader time of the trigger */
    int64_t trigger_wall_ns;   /* and ns since the epoch */
    uint64_t window_ns;        /* how far back it was asked to reach */
    uint64_t after_ns;         /* and how long after the trigger */
};

/* Fills `c` from trace `t`'s metadata (of an opened reader `r`). Returns
 * 1 for a capture, 0 for a trace that is not one (c zeroed). */
int bmt_capture_info_read(const struct bmt_reader *r, const struct bmt_trace *t, struct bmt_capture_info *c);

/* The first capture among r's traces: 1 and its description, or 0. */
int bmt_capture_info_find(const struct bmt_reader *r, struct bmt_capture_info *c);

/* The same for the traces at `paths` (as bmt_reader_open takes them),
 * before an analysis's pass over them reads them again: the trigger's time
 * is in the reader time that pass will use. 1, or 0 when they hold no
 * capture or cannot be opened (the pass then says why). */
int bmt_capture_info_load(const char *const *paths, unsigned count, struct bmt_capture_info *c);

/* "15.9 ms > 10 ms", "1200 words > 1000 words", "-": the trigger's value
 * against its bound, as people read it. */
void bmt_capture_info_value_text(const struct bmt_capture_info *c, char *out, size_t size);

/* "2026-06-11 03:00:12.345 UTC" of ns since the epoch. */
void bmt_capture_info_utc_text(int64_t wall_ns, char out[40]);

/* One line for people: "capture 3, fired 2026-06-11 03:00:12.345 UTC by
 * call bmt_kv:get/2 in <0.86.0>: 15.9 ms > 10 ms" (no newline). */
void bmt_capture_info_text(const struct bmt_capture_info *c, char *out, size_t size);

#endif
