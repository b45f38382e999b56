/* Latency split by value (`calls --group-by return|arg:N`): per function
 * and distinct value text (the value returned, or argument N, as the trace
 * recorded it: function_result, function_call_args), a latency histogram.
 *
 * Values are compared by their text cut to BMT_GROUP_VALUE_BYTES; a
 * function keeps its first BMT_GROUP_MAX_VALUES distinct values apart and
 * folds the rest into one "other" row, so memory grows with the number of
 * functions, not with the number of distinct values (a cache keyed by user
 * id would otherwise make a row per user). Fed by calls.c as frames end.
 * In a sampled trace each row's count is scaled back by the call ratio in
 * force at each call (a value event comes with its call: sampled.h); its
 * percentiles are of the calls kept, as calls' own. Single-threaded.
 */
#ifndef BMT_CLI_GROUPBY_H
#define BMT_CLI_GROUPBY_H

#include "acc.h"
#include "histogram.h"
#include "base/strtab.h"

#include <stddef.h>
#include <stdint.h>

#define BMT_GROUP_VALUE_BYTES 64
#define BMT_GROUP_MAX_VALUES 16
/* The value id of a function's "other" row. */
#define BMT_GROUP_OTHER (UINT32_MAX - 1)

struct bmt_group_row {
    uint32_t func;          /* function id (the caller's: calls' cs.funcs) */
    uint32_t value;         /* id in values, or BMT_GROUP_OTHER */
    struct bmt_hist hist;   /* latency of its finished calls kept, ns */
    uint64_t count;         /* its finished calls, scaled back in a sampled trace */
};

struct bmt_groupby {
    unsigned arg;           /* 0: the value returned; N >= 1: argument N */
    struct bmt_strtab values;
    struct bmt_u64map index; /* func << 32 | value -> row */
    struct bmt_group_row *rows;
    uint32_t row_count, row_cap;
    uint32_t *distinct;     /* by function id: values with a row of their own */
    uint32_t distinct_cap;
    uint64_t value_events;  /* function_result (return) or function_call_args (arg:N) events */
    uint32_t exception_value, none_value; /* ids of "(exception)" and "(none)" */
    uint32_t *pending;      /* where the value of the event being fed goes: calls' cs.value */
};

/* Prepares `g` for argument `arg` (0: the value returned). Returns 0 or
 * -ENOMEM. */
int bmt_groupby_init(struct bmt_groupby *g, unsigned arg);
/* The id of value text `text` (`len` bytes; an argument list when g->arg:
 * its argument arg, or "(none)" when the list has fewer or was cut before
 * it), cut to BMT_GROUP_VALUE_BYTES ("..." marks a cut). Returns the id or
 * -ENOMEM. */
int64_t bmt_groupby_value(struct bmt_groupby *g, const char *text, size_t len);
/* Counts a finished call of function `func` with value `value` (an id, or
 * BMT_CS_NONE: "(none)"), `duration_ns` long, standing for `weight` calls
 * (the call ratio in force at it; 1 when not sampled). Returns 0 or
 * -ENOMEM. */
int bmt_groupby_add(struct bmt_groupby *g, uint32_t func, uint32_t value, uint64_t duration_ns,
                    uint32_t weight);
/* Argument `n` (>= 1) of printed argument list `list` ("[A1,A2,...]"):
 * *at and *alen give its text. Returns 0, or -1 when the list has fewer
 * arguments or was cut before the end of argument n. */
int bmt_groupby_arg(const char *list, size_t len, unsigned n, size_t *at, size_t *alen);
/* Row indices, by function name (names from `funcs`), then the largest
 * count first, "other" last (malloc'd; NULL when out of memory). */
uint32_t *bmt_groupby_sorted(const struct bmt_groupby *g, const struct bmt_strtab *funcs);
/* The value text of a row. */
const char *bmt_groupby_value_text(const struct bmt_groupby *g, const struct bmt_group_row *r);
void bmt_groupby_free(struct bmt_groupby *g);

/* As an accumulator (acc.h), in the same pass as calls' and before it:
 * takes function_result (return) or function_call_args (arg:N) events and
 * leaves each one's value in *pending for the calls accumulator, which
 * gets the same event next, as OTP's function_return or function_call
 * (run.c), and clears it. Set pending after init. */
int bmt_groupby_acc_init(void *self, struct bmt_an_scope *scope);
extern const struct bmt_acc bmt_groupby_acc;

#endif
