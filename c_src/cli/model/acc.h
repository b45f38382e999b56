/* An accumulator: one analysis of the one pass over a trace (run.h), as a
 * small descriptor any command, or `report`, composes.
 *
 * Each declares what it reads from the reader: per tracepoint, the
 * catalogue fields it uses (struct bmt_needs). The pass gives an
 * accumulator only the events it declared, so one that reads gc_* events
 * costs nothing on the others; and it unions every declaration, with the
 * names' and the scope's own, into the mask of fields the reader must
 * decode (scope->want). The message_*_link events (record --links) reach
 * an accumulator as they are when it declares them, and as OTP's
 * message_send / message_receive (whose fields they begin with:
 * model/layouts.h) when it declares only those.
 *
 * Lifecycle, per accumulator `self` (its state, the caller's memory):
 * init(self, scope) once; the caller then sets its configuration; the pass
 * calls packet() and feed() in time order and finish() at the end; the
 * caller reads the results (accumulators compute, they do not print) and
 * calls free(). Single-threaded.
 */
#ifndef BMT_CLI_ACC_H
#define BMT_CLI_ACC_H

#include "core/catalogue.h"

#include <stdint.h>

struct bmt_an_scope;
struct bmt_an_pass;
struct bmt_reader;
struct bmt_record;
struct bmt_packet_info;

/* What an accumulator reads: for each tracepoint, bit i for catalogue
 * field i it uses, and BMT_NEED_EVENT when it takes the event at all (with
 * or without fields). all_events: every event, fields or not (for its
 * time). */
struct bmt_needs {
    uint16_t fields[BMT_TP_COUNT];
    int all_events;
};

#define BMT_NEED_EVENT 0x8000u
_Static_assert(BMT_MAX_FIELDS < 15, "bmt_needs holds a field mask and BMT_NEED_EVENT in 16 bits");

/* Initialiser helpers: NEED(tp, fields) for one tracepoint's entry, and
 * BMT_FIELD(tp, f) for one of its fields, from the generated positions. */
#define BMT_NEED(tp, fields) [BMT_TP_##tp] = BMT_NEED_EVENT | (fields)
#define BMT_FIELD(tp, f) (1u << BMT_F_##tp##_##f)

struct bmt_acc {
    const char *name;
    /* Prepares `self` for `scope`. Returns 0 or -ENOMEM (free it anyway). */
    int (*init)(void *self, struct bmt_an_scope *scope);
    /* Takes one event it declared. Returns 0 or a negative errno (-ENOMEM). */
    int (*feed)(void *self, const struct bmt_record *rec);
    /* Called with each packet entered, before its events; or NULL. */
    void (*packet)(void *self, const struct bmt_reader *r, unsigned stream,
                   const struct bmt_packet_info *info);
    /* Closes what is open at the pass's end. Returns 0 or a negative errno;
     * or NULL. */
    int (*finish)(void *self, const struct bmt_an_pass *pass);
    void (*free)(void *self);
    const struct bmt_needs *needs;
    /* BMT_SCALES when it scales counts and totals back by the sampling
     * ratio in force at each event (sampled.h); BMT_SCALES_NOT when they
     * are of the events kept; BMT_SCALES_NOTHING when it reads no kind the
     * recorder samples. The pass says which scale and which do not. */
    int scales;
};

enum { BMT_SCALES_NOT = 0, BMT_SCALES = 1, BMT_SCALES_NOTHING = 2 };

/* One accumulator of a pass, and its state. */
struct bmt_an_sub {
    const struct bmt_acc *acc;
    void *self;
};

#endif
