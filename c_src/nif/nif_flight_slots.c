/* The call-latency triggers' slots (contract in nif_flight_slots.h). */
#include "nif_flight_slots.h"

#include <stdatomic.h>
#include <string.h>

struct bmt_flight_calls *bmt_flight_slots_new(uint64_t first_claim)
{
    struct bmt_flight_calls *fcs = enif_alloc(sizeof *fcs);
    if (!fcs)
        return NULL;
    memset(fcs, 0, sizeof *fcs);
    fcs->lock = enif_mutex_create("beamtrace_flight_calls");
    if (!fcs->lock) {
        enif_free(fcs);
        return NULL;
    }
    atomic_init(&fcs->holders, 1);
    fcs->claims = first_claim;
    return fcs;
}

void bmt_flight_slots_drop(struct bmt_flight_calls *fcs)
{
    if (atomic_fetch_sub(&fcs->holders, 1) != 1)
        return;
    for (unsigned i = 0; i < BMT_FLIGHT_SLOTS; i++)
        enif_free(fcs->slot[i].table);
    enif_mutex_destroy(fcs->lock);
    enif_free(fcs);
}
