/* Sends matched to receives (contract in flows.h). */
#include "flows.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>

#define NONE UINT32_MAX

struct bmt_flows_pend {
    uint32_t next;     /* next entry of the queue, or NONE */
    uint32_t from;
    uint64_t ts_ns;
};

struct bmt_flows_queue {
    uint32_t head, tail; /* pend indices; a free queue threads the free list through tail */
};

void bmt_flows_init(struct bmt_flows *f)
{
    *f = (struct bmt_flows){0};
    bmt_u64map_init(&f->pending);
    f->pend_free = f->queue_free = NONE;
}

static uint64_t key(const struct bmt_value *to, const struct bmt_value *msg)
{
    return bmt_hash_bytes(msg->str, msg->len, bmt_hash_bytes(to->str, to->len, 1));
}

/* A pend entry for a new send: from the free list, or a new one. */
static int64_t new_pend(struct bmt_flows *f)
{
    if (f->pend_free != NONE) {
        uint32_t pi = f->pend_free;
        f->pend_free = f->pends[pi].next;
        return pi;
    }
    struct bmt_flows_pend *p = bmt_grow(f->pends, &f->pend_cap, f->pend_count, sizeof *p);
    if (!p)
        return -ENOMEM;
    f->pends = p;
    return f->pend_count++;
}

/* The queue index a new queue would take (made by the caller's insert). */
static int64_t next_queue(struct bmt_flows *f)
{
    if (f->queue_free != NONE)
        return f->queue_free;
    struct bmt_flows_queue *q = bmt_grow(f->queues, &f->queue_cap, f->queue_count, sizeof *q);
    if (!q)
        return -ENOMEM;
    f->queues = q;
    return f->queue_count;
}

int bmt_flows_send(struct bmt_flows *f, const struct bmt_value *to, uint32_t from, uint64_t ts,
                   const struct bmt_value *msg)
{
    if (f->pend_count >= BMT_FLOWS_MAX_PENDING && f->pend_free == NONE) {
        f->dropped_count++;
        return 0;
    }
    int64_t pi = new_pend(f), qi = pi < 0 ? pi : next_queue(f);
    if (qi < 0)
        return (int)qi;
    f->pends[pi] = (struct bmt_flows_pend){NONE, from, ts};
    int created;
    uint32_t *slot = bmt_u64map_get(&f->pending, key(to, msg), (uint32_t)qi, &created);
    if (!slot)
        return -ENOMEM;
    if (created) {
        if (qi == f->queue_free)
            f->queue_free = f->queues[qi].tail;
        else
            f->queue_count++;
        f->queues[qi] = (struct bmt_flows_queue){(uint32_t)pi, (uint32_t)pi};
    } else {
        struct bmt_flows_queue *q = &f->queues[*slot];
        f->pends[q->tail].next = (uint32_t)pi;
        q->tail = (uint32_t)pi;
    }
    return 0;
}

int bmt_flows_receive(struct bmt_flows *f, const struct bmt_value *to, const struct bmt_value *msg,
                      uint32_t *from, uint64_t *ts)
{
    uint64_t k = key(to, msg);
    uint32_t qi = bmt_u64map_find(&f->pending, k);
    if (qi == UINT32_MAX)
        return 0;
    struct bmt_flows_queue *q = &f->queues[qi];
    uint32_t pi = q->head;
    struct bmt_flows_pend p = f->pends[pi];
    f->pends[pi].next = f->pend_free;
    f->pend_free = pi;
    if (p.next == NONE) {
        bmt_u64map_remove(&f->pending, k);
        q->tail = f->queue_free;
        f->queue_free = qi;
    } else {
        q->head = p.next;
    }
    *from = p.from;
    *ts = p.ts_ns;
    return 1;
}

void bmt_flows_free(struct bmt_flows *f)
{
    bmt_u64map_free(&f->pending);
    free(f->pends);
    free(f->queues);
}
