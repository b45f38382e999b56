/* Waiting time by waking sender, bounded (contract in wakers.h). */
#include "wakers.h"

void bmt_wakers_add(struct bmt_wakers *t, uint32_t pid, uint64_t ns)
{
    unsigned least = 0;
    if (!ns)
        return;
    for (unsigned i = 0; i < t->count; i++) {
        if (t->pid[i] == pid) {
            t->ns[i] += ns;
            return;
        }
        if (t->ns[i] < t->ns[least])
            least = i;
    }
    if (t->count < BMT_WAKERS_MAX) {
        t->pid[t->count] = pid;
        t->ns[t->count++] = ns;
    } else if (ns > t->ns[least]) {
        /* The newcomer brings more than the smallest: that one folds out. */
        t->other_ns += t->ns[least];
        t->pid[least] = pid;
        t->ns[least] = ns;
    } else {
        t->other_ns += ns;
    }
}

void bmt_wakers_merge(struct bmt_wakers *into, const struct bmt_wakers *from, uint64_t weight)
{
    for (unsigned i = 0; i < from->count; i++)
        bmt_wakers_add(into, from->pid[i], from->ns[i] * weight);
    into->other_ns += from->other_ns * weight;
}

uint64_t bmt_wakers_total(const struct bmt_wakers *t)
{
    uint64_t sum = t->other_ns;
    for (unsigned i = 0; i < t->count; i++)
        sum += t->ns[i];
    return sum;
}

unsigned bmt_wakers_order(const struct bmt_wakers *t, unsigned order[BMT_WAKERS_MAX])
{
    unsigned n = 0;
    for (unsigned i = 0; i < t->count; i++) {
        unsigned at = n++;
        while (at > 0 && (t->ns[i] > t->ns[order[at - 1]] ||
                          (t->ns[i] == t->ns[order[at - 1]] && t->pid[i] < t->pid[order[at - 1]]))) {
            order[at] = order[at - 1];
            at--;
        }
        order[at] = i;
    }
    return n;
}
