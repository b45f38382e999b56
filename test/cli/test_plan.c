/* The compiled decoders (c_src/cli/ctf/plan.h) against the type-tree walk
 * (decode.h), event by event, on the layouts a metadata file declares.
 *
 * For each metadata file given: random events are encoded by walking the
 * metadata's own type trees (every field type the reader accepts), some
 * left whole, some cut short at a random bit, some with a random byte
 * changed; each is decoded both ways, with a random field selection. The
 * property: wherever the compiled decoder accepts an event, the walk
 * accepts it too, ends at the same bit, finds the same event class and
 * clock, and reads the same values for every selected field; wherever the
 * walk rejects one, the compiled decoder rejects it. With --expect-fast,
 * every event class of the catalogue must also have a compiled decoder and
 * every whole event of those classes must be decoded by it (beamtrace's and
 * LTTng-UST's little-endian layouts). Links only ctf/, base/ and core/: the reader
 * depends on nothing above it.
 *
 *   test_plan [--expect-fast] [--events N] METADATA...
 * TAP lines; exit 1 on a failure.
 */
#include "ctf/decode.h"
#include "ctf/metadata.h"
#include "ctf/plan_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BUF_BYTES 8192
#define MAX_SLOTS 4096

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int failures, checks;

static void ok(int cond, const char *what)
{
    checks++;
    if (!cond)
        failures++;
    printf("%s - %s\n", cond ? "ok" : "not ok", what);
}

/* ---- a bit writer in CTF 1.8's bit order ---- */

struct enc {
    uint8_t *buf;
    uint64_t pos;               /* bits */
    uint64_t cap;               /* bits */
    uint64_t ints[MAX_SLOTS];   /* integer values by slot (lengths, tags) */
    int full;
};

static void put_bits(struct enc *e, uint64_t v, unsigned size, int be)
{
    if (e->pos + size > e->cap) {
        e->full = 1;
        return;
    }
    for (unsigned i = 0; i < size; i++) {
        unsigned bit = be ? (unsigned)(v >> (size - 1 - i)) & 1 : (unsigned)(v >> i) & 1;
        uint64_t j = e->pos + i;
        unsigned shift = be ? 7 - (unsigned)(j % 8) : (unsigned)(j % 8);
        if (bit)
            e->buf[j / 8] |= (uint8_t)(1u << shift);
        else
            e->buf[j / 8] &= (uint8_t)~(1u << shift);
    }
    e->pos += size;
}

static void align(struct enc *e, uint32_t a)
{
    while (a > 1 && e->pos % a && !e->full)
        put_bits(e, 0, 1, 0);
}

/* The stream class whose events are being encoded. */
static const struct bmt_ctf_stream_class *cur_sc;

/* A value for integer `t`: mostly a declared event id for an id field,
 * inside one of its ranges for an enumeration, often small (lengths),
 * sometimes anything. */
static uint64_t int_value(const struct bmt_ctf_type *t)
{
    uint64_t mask = t->size_bits >= 64 ? ~0ull : (1ull << t->size_bits) - 1;
    if (t->meaning == BMT_M_EVENT_ID && cur_sc && cur_sc->event_count && rnd() % 4)
        return cur_sc->events[rnd() % cur_sc->event_count]->id & mask;
    if (t->kind == BMT_CTF_ENUM && t->range_count && rnd() % 8) {
        const struct bmt_ctf_range *r = &t->ranges[rnd() % t->range_count];
        uint64_t span = r->hi - r->lo;
        return (r->lo + (span == ~0ull ? rnd() : rnd() % (span + 1))) & mask;
    }
    return (rnd() % 4 ? rnd() % 24 : rnd()) & mask;
}

static void encode(struct enc *e, const struct bmt_ctf_type *t)
{
    if (e->full)
        return;
    align(e, t->align_bits);
    int be = t->byte_order == BMT_CTF_BE;
    switch (t->kind) {
    case BMT_CTF_INT:
    case BMT_CTF_ENUM: {
        uint64_t v = int_value(t);
        put_bits(e, v, t->size_bits, be);
        if (t->slot < MAX_SLOTS)
            e->ints[t->slot] = v;
        return;
    }
    case BMT_CTF_FLOAT:
        put_bits(e, rnd(), t->size_bits, be);
        return;
    case BMT_CTF_STRING: {
        unsigned n = (unsigned)(rnd() % 30);
        for (unsigned i = 0; i < n; i++)
            put_bits(e, 'a' + rnd() % 26, 8, 0);
        put_bits(e, 0, 8, 0);
        return;
    }
    case BMT_CTF_STRUCT:
        for (uint32_t i = 0; i < t->member_count; i++)
            encode(e, t->members[i].type);
        return;
    case BMT_CTF_ARRAY:
    case BMT_CTF_SEQUENCE: {
        uint64_t n = t->kind == BMT_CTF_ARRAY ? t->length
                                              : t->target->slot < MAX_SLOTS ? e->ints[t->target->slot] : 0;
        for (uint64_t i = 0; i < n && i < 64 && !e->full; i++) {
            if (t->is_text && rnd() % 5 == 0)
                put_bits(e, 0, 8, 0); /* a NUL inside a text array */
            else
                encode(e, t->elem);
        }
        return;
    }
    case BMT_CTF_VARIANT: {
        const struct bmt_ctf_type *tag = t->target;
        uint64_t v = tag->slot < MAX_SLOTS ? e->ints[tag->slot] : 0;
        for (uint32_t r = 0; r < tag->range_count; r++) {
            const struct bmt_ctf_range *g = &tag->ranges[r];
            int in = tag->is_signed ? (int64_t)v >= (int64_t)g->lo && (int64_t)v <= (int64_t)g->hi
                                    : v >= g->lo && v <= g->hi;
            if (in) {
                if (t->range_option[r] >= 0)
                    encode(e, t->members[t->range_option[r]].type);
                return;
            }
        }
        return;
    }
    }
}

/* ---- one layout ---- */

struct plans {
    const struct bmt_body_plan **by_index;   /* per event class of the metadata */
    uint32_t *want;                          /* its selection */
};

static int check_layout(const char *path, int expect_fast, unsigned events)
{
    char name[300], err[BMT_META_ERROR_BYTES];
    snprintf(name, sizeof name, "%s", path);
    FILE *f = fopen(path, "rb");
    if (!f) {
        ok(0, path);
        return -1;
    }
    static char text[1 << 22];
    size_t len = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    struct bmt_meta m;
    int rc = bmt_meta_parse(&m, text, len, err);
    char what[1200];
    snprintf(what, sizeof what, "%s: metadata parses (%s)", name, rc ? err : "ok");
    ok(rc == 0, what);
    if (rc) {
        bmt_meta_free(&m);
        return -1;
    }
    struct bmt_arena a;
    bmt_arena_init(&a);
    struct plans p = {calloc(m.event_count + 1, sizeof *p.by_index),
                      calloc(m.event_count + 1, sizeof *p.want)};
    unsigned headers = 0, bodies = 0, bound = 0, bound_fast = 0;
    for (unsigned s = 0; s < m.stream_count; s++)
        headers += m.streams[s]->fast_header != NULL;
    for (unsigned k = 0; k < m.event_count; k++) {
        const struct bmt_ctf_event_class *ec = m.events[k];
        const struct bmt_ctf_stream_class *sc = bmt_meta_stream(&m, 1, ec->stream_id);
        const struct bmt_ctf_type *roots[3] = {sc->event_context, ec->context, ec->fields};
        int cat = ec->tp != BMT_TP_NONE;
        p.want[k] = cat ? (uint32_t)rnd() : 0;
        if (bmt_plan_body(&a, roots, ec->cat_slot, cat ? bmt_catalogue[ec->tp].field_count : 0,
                          p.want[k], &p.by_index[k]) < 0)
            return -1;
        bodies += p.by_index[k] != NULL;
        bound += cat;
        bound_fast += cat && p.by_index[k];
    }
    if (expect_fast) {
        snprintf(what, sizeof what, "%s: every stream class has a header plan (%u of %u)", name,
                 headers, m.stream_count);
        ok(headers == m.stream_count, what);
        snprintf(what, sizeof what, "%s: every catalogue event class has a body plan (%u of %u)",
                 name, bound_fast, bound);
        ok(bound_fast == bound && bound > 0, what);
    }
    static uint8_t buf[BUF_BYTES];
    static struct bmt_value gvals[MAX_SLOTS], cat[BMT_MAX_FIELDS];
    static struct enc e;
    unsigned walk_ok = 0, fast_ok = 0, whole = 0, whole_fast = 0, bad = 0;
    for (unsigned n = 0; n < events && !bad; n++) {
        const struct bmt_ctf_stream_class *sc = m.streams[rnd() % m.stream_count];
        if (sc->slot_count > MAX_SLOTS)
            break;
        memset(&e, 0, sizeof e);
        memset(buf, 0xa5, sizeof buf);
        e.buf = buf;
        e.cap = BUF_BYTES * 8;
        e.pos = rnd() % 4 ? rnd() % 8 * 8 : rnd() % 64; /* the event's start, bits from the packet's */
        uint64_t start = e.pos;
        cur_sc = sc;
        if (sc->event_header)
            encode(&e, sc->event_header);
        /* The walk tells which event the header names; its body follows. */
        struct bmt_decode d;
        memset(&d, 0, sizeof d);
        d.base = buf;
        d.pos = start;
        d.end = e.pos;
        d.vals = gvals;
        if (bmt_decode_run(&d, sc->header) < 0)
            continue;
        const struct bmt_ctf_event_class *ec = bmt_meta_event(sc, d.meaning[BMT_M_EVENT_ID]);
        if (!ec)
            continue;
        const struct bmt_ctf_type *roots[3] = {sc->event_context, ec->context, ec->fields};
        for (int i = 0; i < 3; i++)
            if (roots[i])
                encode(&e, roots[i]);
        if (e.full)
            continue;
        uint64_t end = e.pos;
        unsigned how = (unsigned)(rnd() % 4);
        if (how == 1)
            end = start + rnd() % (end - start + 1);     /* cut short */
        else if (how == 2)
            buf[(start + rnd() % (end - start + 1)) / 8] = (uint8_t)rnd(); /* a changed byte */
        else if (how == 3)
            end += rnd() % 64;                           /* content beyond the event */
        uint64_t clock0 = rnd();
        /* The walk. */
        memset(&d, 0, sizeof d);
        d.base = buf;
        d.pos = start;
        d.end = end;
        d.vals = gvals;
        d.clock = clock0;
        int wok = bmt_decode_run(&d, sc->header) == 0;
        const struct bmt_ctf_event_class *wec = wok ? bmt_meta_event(sc, d.meaning[BMT_M_EVENT_ID]) : NULL;
        wok = wec && bmt_decode_run(&d, wec->body) == 0 && d.pos != start;
        walk_ok += wok;
        /* The compiled decoders, as the reader runs them. */
        int fok = 0;
        const struct bmt_ctf_event_class *fec = NULL;
        const uint8_t *at = NULL;
        uint64_t id = 0, clock = clock0;
        if (sc->fast_header && start % 8 == 0) {
            const uint8_t *from = buf + start / 8, *lim = buf + end / 8;
            at = bmt_plan_run_header(sc->fast_header, buf, from, lim, &id, &clock);
            fec = at ? bmt_meta_event(sc, id) : NULL;
            const struct bmt_body_plan *bp = fec ? p.by_index[fec->index] : NULL;
            at = bp ? bmt_plan_run_body(bp, buf, at, lim, cat) : NULL;
            fok = at && at != from;
        }
        fast_ok += fok;
        if ((how == 0 || how == 3) && start % 8 == 0 && wok && wec->tp != BMT_TP_NONE) {
            whole++;                    /* a whole catalogue event, as a tracer writes it */
            whole_fast += fok;
        }
        if (!fok)
            continue;
        int same = wok && fec == wec && (uint64_t)(at - buf) * 8 == d.pos && clock == d.clock;
        if (same && fec->tp != BMT_TP_NONE) {
            const struct bmt_tracepoint *tp = &bmt_catalogue[fec->tp];
            for (unsigned i = 0; i < tp->field_count; i++) {
                if (!(p.want[fec->index] >> i & 1))
                    continue;
                const struct bmt_value *g = &gvals[fec->cat_slot[i]];
                same = same && (tp->fields[i].type == BMT_FIELD_STRING
                                    ? g->str == cat[i].str && g->len == cat[i].len
                                    : g->integer == cat[i].integer);
            }
        }
        if (!same) {
            bad = 1;
            printf("# event %u (%s, how %u): walk %s at bit %llu, compiled decoder accepts it at "
                   "bit %llu\n", n, fec->name, how, wok ? "accepts" : "rejects",
                   (unsigned long long)d.pos, (unsigned long long)(at - buf) * 8);
        }
    }
    snprintf(what, sizeof what, "%s: compiled decoders accept only what the walk accepts, with "
             "its values (%u events, the walk read %u, the compiled decoders %u)", name, events,
             walk_ok, fast_ok);
    ok(!bad && walk_ok > events / 20, what);
    if (expect_fast) {
        snprintf(what, sizeof what, "%s: the compiled decoders read every whole catalogue event (%u of %u)",
                 name, whole_fast, whole);
        ok(whole_fast == whole && whole > 0, what);
    }
    free(p.by_index);
    free(p.want);
    bmt_arena_free(&a);
    bmt_meta_free(&m);
    return 0;
}

int main(int argc, char **argv)
{
    int expect_fast = 0;
    unsigned events = 20000;
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; i++) {
        if (strcmp(argv[i], "--expect-fast") == 0)
            expect_fast = 1;
        else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc)
            events = (unsigned)atoi(argv[++i]);
    }
    for (; i < argc; i++)
        check_layout(argv[i], expect_fast, events);
    printf("# %d checks, %d failed\n", checks, failures);
    return failures ? 1 : 0;
}
