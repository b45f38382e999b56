/* Flame graph widths and layout (contract in flame.h). */
#include "flame.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

const char *const bmt_flame_pseudo[BMT_P_COUNT] = {"[gc]", "[runnable]", "[waiting]", "[off-cpu]"};

uint64_t bmt_flame_weights(const struct bmt_callstack *cs, uint32_t n, enum bmt_flame_mode mode,
                           uint64_t pseudo[BMT_P_COUNT])
{
    const struct bmt_cs_node *node = &cs->nodes[n];
    int split = cs->scope->receive_count > 0;
    memset(pseudo, 0, BMT_P_COUNT * sizeof *pseudo);
    if (n == 0)
        return 0; /* process nodes carry time only from calls pruned from a full tree */
    if (mode != BMT_FLAME_OFF_CPU)
        pseudo[BMT_P_GC] = node->self[BMT_K_GC];
    if (mode != BMT_FLAME_ON_CPU) {
        if (split) {
            pseudo[BMT_P_RUNNABLE] = bmt_kind_runnable(node->self);
            pseudo[BMT_P_WAITING] = node->self[BMT_K_WAITING];
        } else {
            pseudo[BMT_P_OFF] = bmt_kind_runnable(node->self) + node->self[BMT_K_WAITING];
        }
    }
    if (mode == BMT_FLAME_OFF_CPU)
        return 0;
    return node->self[BMT_K_ON_CPU] + (mode == BMT_FLAME_ALL ? bmt_kind_unknown(node->self) : 0);
}

int bmt_flame_layout(const struct bmt_callstack *cs, struct bmt_flame_layout *l,
                     enum bmt_flame_mode mode)
{
    uint32_t n = cs->node_count ? cs->node_count : 1;
    l->first_child = malloc(n * sizeof(uint32_t));
    l->next_sibling = malloc(n * sizeof(uint32_t));
    l->total = calloc(n, sizeof(uint64_t));
    if (!l->first_child || !l->next_sibling || !l->total)
        return -ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        l->first_child[i] = l->next_sibling[i] = BMT_CS_NONE;
    /* Children in creation order: link from the last node backwards. */
    for (uint32_t i = cs->node_count; i-- > 1;) {
        uint32_t p = cs->nodes[i].parent;
        l->next_sibling[i] = l->first_child[p];
        l->first_child[p] = i;
    }
    /* Parents have smaller ids than children, so one backward sweep sums. */
    for (uint32_t i = cs->node_count; i-- > 1;) {
        uint64_t pseudo[BMT_P_COUNT];
        l->total[i] += bmt_flame_weights(cs, i, mode, pseudo);
        for (int k = 0; k < BMT_P_COUNT; k++)
            l->total[i] += pseudo[k];
        l->total[cs->nodes[i].parent] += l->total[i];
    }
    l->max_depth = 0;
    for (uint32_t i = 1; i < cs->node_count; i++) {
        unsigned d = 0;
        for (uint32_t m = i; m != 0 && d <= BMT_CS_MAX_DEPTH + 1; m = cs->nodes[m].parent)
            d++;
        if (d > l->max_depth)
            l->max_depth = d;
    }
    return 0;
}

void bmt_flame_layout_free(struct bmt_flame_layout *l)
{
    free(l->first_child);
    free(l->next_sibling);
    free(l->total);
}
