/* The call-latency triggers' slots (nif_flight_call.h says what a trigger
 * is): the table the library's state and every trigger resource share,
 * and its lifetime. Apart from the trigger's code so that the library's
 * state can drop its hold without depending on that code (which works on
 * the state).
 */
#ifndef BMT_NIF_FLIGHT_SLOTS_H
#define BMT_NIF_FLIGHT_SLOTS_H

#include <erl_nif.h>
#include <stdint.h>

#define BMT_CALL_TABLE_ENTRIES 16384u /* a power of two */
#define BMT_CALL_LEVELS 2
#define BMT_FLIGHT_SLOTS 32u /* call triggers at once, per loaded library; a power of two */
#define BMT_FLIGHT_SLOT_BITS 5

struct bmt_call_entry {
    _Atomic uint64_t pid;        /* the process's term word, EMPTY or FREE */
    uint32_t depth;              /* calls of the function in progress */
    uint32_t pad;
    uint64_t start_ns[BMT_CALL_LEVELS]; /* the outermost levels' start times */
};

/* A trigger: one slot of the library's table. `tag` is its tracer state's
 * value while claimed, 0 while free; the rest is written before the tag
 * is published (release) and read after it is seen (acquire). */
struct bmt_flight_call {
    _Atomic uint64_t tag;        /* (claim number << BMT_FLIGHT_SLOT_BITS) | slot; 0: free */
    uint64_t released_ns;        /* when given back (0: never claimed) */
    int index;                   /* the session */
    uint64_t generation;
    uint64_t bound_ns;
    char function[256];          /* "m:f/a" */
    struct bmt_call_entry *table; /* BMT_CALL_TABLE_ENTRIES, made at the first claim, kept
                                     until the library's state goes: a late callback never
                                     writes freed memory */
    _Atomic uint64_t calls, slow, unmeasured, unmatched, deep;
};

/* The slots, shared by the library's state (one holder) and every trigger
 * resource (one each), freed by the last. */
struct bmt_flight_calls {
    ErlNifMutex *lock;           /* claims and releases */
    _Atomic int holders;
    uint64_t claims;             /* claim numbers, under lock */
    struct bmt_flight_call slot[BMT_FLIGHT_SLOTS];
};

/* New slots, all free, held once (by the library's state); claim numbers
 * start at `first_claim`. NULL when out of memory. */
struct bmt_flight_calls *bmt_flight_slots_new(uint64_t first_claim);

/* Drops one hold; the last frees the slots and their tables. */
void bmt_flight_slots_drop(struct bmt_flight_calls *fcs);

#endif
