/* Sampling: a session keeps one event in N of an event kind, N the kind's
 * ratio. The tracer decides each event in enabled_* (nif/nif_sample.h)
 * from the ratios here; the session's consumer changes them when the
 * offered rate passes max_rate (on_max_rate = sample) and records every
 * change in the trace (a sample_ratio event) and in a short history, from
 * which a capture says the ratios in force where its window begins.
 *
 * Kinds are erlang:trace/3's flags: a tracepoint's kind is its catalogue
 * flag. Returns (function_return, function_exception) are never sampled
 * themselves: a call the tracer answers `discard' never runs its match
 * spec, so the VM arms no return_trace for it and its return never comes.
 *
 * Concurrency: the ratios, thresholds and the sampled mask are written by
 * one thread at a time (the session's start, then its consumer) and read
 * by any writer with relaxed loads: a writer that sees an old ratio for a
 * moment keeps or drops one event by the old one. The history is the
 * consumer's. Pure C.
 */
#ifndef BMT_SAMPLING_H
#define BMT_SAMPLING_H

#include "core/catalogue.h"

#include <stdatomic.h>
#include <stdint.h>

enum bmt_sample_kind {
    BMT_SAMPLE_CALL = 0,
    BMT_SAMPLE_SEND,
    BMT_SAMPLE_RECEIVE,
    BMT_SAMPLE_RUNNING,
    BMT_SAMPLE_GC,
    BMT_SAMPLE_PROCS,
    BMT_SAMPLE_PORTS,
    BMT_SAMPLE_KINDS,
    BMT_SAMPLE_NONE = -1,
};

/* What the consumer does when the offered rate passes max_rate. */
enum bmt_on_max_rate { BMT_ON_MAX_RATE_STOP = 0, BMT_ON_MAX_RATE_SAMPLE };

/* The largest ratio: past it a session keeps one event in a million. */
#define BMT_SAMPLE_MAX_RATIO (UINT32_C(1) << 20)
/* Ratio changes remembered (for captures' windows). */
#define BMT_SAMPLE_HISTORY 64

struct bmt_sample_change {
    uint64_t ts_ns;               /* trace clock */
    uint32_t ratio[BMT_SAMPLE_KINDS];
};

struct bmt_sampling {
    _Atomic uint64_t mask;        /* tracepoints sampled now (a kind's ratio > 1) */
    _Atomic uint32_t threshold[BMT_SAMPLE_KINDS]; /* keep when a 32-bit random < this */
    _Atomic uint32_t ratio[BMT_SAMPLE_KINDS];     /* 1 in ratio kept; 1: all */
    uint32_t base[BMT_SAMPLE_KINDS]; /* the sample option's: the floor of recovery */
    int8_t kind_of[BMT_TP_COUNT];    /* each tracepoint's kind, or BMT_SAMPLE_NONE */
    /* The consumer's: the ratio changes, oldest first (a ring). */
    struct bmt_sample_change history[BMT_SAMPLE_HISTORY];
    unsigned history_count;       /* entries in use, <= BMT_SAMPLE_HISTORY */
    unsigned history_next;        /* where the next one goes */
    uint32_t reactions;           /* changes made for max_rate, both ways */
};

/* Prepares `s` with the sample option's ratios (`ratio[kind]`, 0 or 1 =
 * all; at most BMT_SAMPLE_MAX_RATIO) at `ts_ns`. */
void bmt_sampling_init(struct bmt_sampling *s, const uint32_t ratio[BMT_SAMPLE_KINDS],
                       uint64_t ts_ns);

/* Sets kind `kind`'s ratio (clamped to 1..BMT_SAMPLE_MAX_RATIO) at
 * `ts_ns` and notes it in the history (one entry per call of
 * bmt_sampling_note). Returns 1 when it changed. One thread at a time. */
int bmt_sampling_set(struct bmt_sampling *s, enum bmt_sample_kind kind, uint32_t ratio);
void bmt_sampling_note(struct bmt_sampling *s, uint64_t ts_ns);

/* The ratios that were in force at `ts_ns` (the oldest remembered when
 * older than the history). */
void bmt_sampling_at(const struct bmt_sampling *s, uint64_t ts_ns,
                     uint32_t ratio[BMT_SAMPLE_KINDS]);

/* The kind's name, as the sample option and the sample_ratio event spell it. */
const char *bmt_sample_kind_name(enum bmt_sample_kind kind);

/* The kind a catalogue flag ("call", "send", ...) names, or BMT_SAMPLE_NONE. */
enum bmt_sample_kind bmt_sample_kind_of_flag(const char *flag);

/* The kinds the max_rate reaction lowers: the ones that come by the
 * thousand (call, send, receive, running, garbage_collection); procs and
 * ports only when the sample option named them. */
int bmt_sample_reacts(const struct bmt_sampling *s, enum bmt_sample_kind kind);

#endif
