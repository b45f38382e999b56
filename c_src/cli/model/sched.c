/* The sched analysis (contract in sched.h). */
#include "sched.h"
#include "run.h"
#include "acc.h"
#include "layouts.h"
#include "base/grow.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int bmt_sched_init(void *self, struct bmt_an_scope *scope)
{
    struct bmt_sched *s = self;
    memset(s, 0, sizeof *s);
    s->scope = scope;
    bmt_hist_init(&s->hist);
    return 0;
}

/* Room for pid id `id` in pending_ns. Returns 0 or -ENOMEM. */
static int pending_room(struct bmt_sched *s, uint32_t id)
{
    uint64_t *p = bmt_grow(s->pending_ns, &s->pid_cap, id, sizeof *p);
    if (!p)
        return -ENOMEM;
    s->pending_ns = p;
    return 0;
}

static int64_t pid_id(struct bmt_sched *s, const char *str, size_t len)
{
    int64_t id = bmt_names_pid(&s->scope->names, str, len);
    if (id >= 0 && pending_room(s, (uint32_t)id) < 0)
        return -ENOMEM;
    return id;
}

int bmt_sched_feed(void *ctx, const struct bmt_record *rec)
{
    struct bmt_sched *s = ctx;
    const struct bmt_an_scope *sc = s->scope;
    const struct bmt_value *v = rec->values;
    uint64_t ts = rec->ts_ns;
    int64_t pid;
    switch (rec->tp) {
    case BMT_TP_message_send: {
        if (!bmt_an_valid(sc, ts))
            return 0;
        const struct bmt_value *to = &v[BMT_F_message_send_to];
        /* Sampled (send kind): the send stands for w, the ratio in force. */
        uint64_t in_window = ts >= sc->window.begin_ns ? sc->sampled.weight[rec->tp] : 0;
        s->sampled_pairs |= in_window > 1;
        s->send_count += in_window;
        if (bmt_names_is_pid(to->str, to->len)) {
            if (!bmt_an_keep(sc, to->str, to->len))
                return 0;
            if ((pid = pid_id(s, to->str, to->len)) < 0)
                return (int)pid;
        } else {
            const struct bmt_value *from = &v[BMT_F_message_send_from];
            if ((pid = bmt_names_holder(&sc->names, from->str, from->len,
                                        to->str, to->len)) < 0)
                return 0;
            if (pending_room(s, (uint32_t)pid) < 0)
                return -ENOMEM;
            const struct bmt_strtab *pids = &sc->names.pids;
            if (!bmt_an_keep(sc, bmt_strtab_str(pids, (uint32_t)pid),
                             bmt_strtab_len(pids, (uint32_t)pid)))
                return 0;
        }
        s->resolved_count += in_window;
        if (!s->pending_ns[pid] || s->from_last)
            s->pending_ns[pid] = ts + 1;
        return 0;
    }
    case BMT_TP_process_scheduled: {
        const struct bmt_value *type = &v[BMT_F_process_scheduled_type];
        if (type->len != 2 || memcmp(type->str, "in", 2) != 0)
            return 0;
        s->sampled_pairs |= sc->sampled.weight[rec->tp] > 1;
        const struct bmt_value *who = &v[BMT_F_process_scheduled_pid];
        pid = bmt_strtab_find(&sc->names.pids, who->str, who->len);
        if (pid < 0 || (uint32_t)pid >= s->pid_cap || !s->pending_ns[pid])
            return 0;
        uint64_t sent = s->pending_ns[pid] - 1;
        s->pending_ns[pid] = 0;
        if (!bmt_an_inside(sc, sent, ts)) {
            s->cut_count++;
            return 0;
        }
        return bmt_hist_add(&s->hist, ts >= sent ? ts - sent : 0);
    }
    default:
        return 0;
    }
}

void bmt_sched_free(void *self)
{
    struct bmt_sched *s = self;
    free(s->pending_ns);
    bmt_hist_free(&s->hist);
}

/* ---- as an accumulator (acc.h) ---- */

static const struct bmt_needs needs = {{
    BMT_NEED(message_send, BMT_FIELD(message_send, from) | BMT_FIELD(message_send, to)),
    BMT_NEED(process_scheduled, BMT_FIELD(process_scheduled, pid) |
                                    BMT_FIELD(process_scheduled, type)),
}, 0};

const struct bmt_acc bmt_sched_acc = {
    "sched", bmt_sched_init, bmt_sched_feed, NULL, NULL, bmt_sched_free, &needs, 1};
