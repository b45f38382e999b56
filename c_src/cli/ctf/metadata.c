/* A trace's metadata: packetized or plain text, parsed by tsdl_parse.c,
 * finished into stream and event classes, bound to the catalogue
 * (contract in metadata.h).
 *
 * Why the checks below: the decoder trusts what this file hands it
 * (alignments are powers of two, integers fit 64 bits, sequence lengths and
 * variant tags name fields decoded earlier), so every such property is
 * checked once here and a trace that breaks one is refused with a message.
 */
#include "metadata.h"
#include "decode.h"
#include "plan.h"
#include "core/event.h"
#include "tsdl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define METADATA_PACKET_MAGIC 0x75D11D57u
#define METADATA_HEADER_BYTES 37
#define DENSE_IDS 65536u

static const char FIX[] = "the metadata is damaged or written by a tool beamtrace cannot read: "
                          "check it with `babeltrace2 --output-format=ctf-metadata DIR`";

static int fail(char *err, int rc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, BMT_META_ERROR_BYTES, fmt, ap);
    va_end(ap);
    return rc;
}

static uint32_t get32(const uint8_t *p, int be)
{
    return be ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
              : bmt_get_u32(p);
}

/* Joins the text of LTTng's metadata packets into one buffer (malloc'd,
 * NUL-terminated). */
static int unpacketize(const uint8_t *in, size_t len, char **text, size_t *text_len,
                       uint8_t uuid[BMT_CTF_UUID_BYTES], char *err)
{
    int be = get32(in, 0) != METADATA_PACKET_MAGIC;
    char *out = malloc(len + 1);
    if (!out)
        return -ENOMEM;
    size_t off = 0, n = 0;
    unsigned count = 0;
    while (off < len) {
        size_t left = len - off;
        const uint8_t *h = in + off;
        if (left < METADATA_HEADER_BYTES) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u at byte %zu is cut short (%zu bytes); "
                        "the trace was not closed cleanly: copy it again once the tracer stopped",
                        count, off, left);
        }
        if (get32(h, be) != METADATA_PACKET_MAGIC) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u at byte %zu has a bad magic number; %s",
                        count, off, FIX);
        }
        /* Sizes in bits that are not whole bytes end at the byte below, as
         * babeltrace2 reads them; a non-zero checksum it cannot verify is refused. */
        uint32_t content_bits = get32(h + 24, be) & ~7u, packet_bits = get32(h + 28, be) & ~7u;
        if (get32(h + 20, be)) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u carries a checksum, which beamtrace does "
                        "not verify: use babeltrace2", count);
        }
        if (count == 0)
            memcpy(uuid, h + 4, BMT_CTF_UUID_BYTES);
        else if (memcmp(uuid, h + 4, BMT_CTF_UUID_BYTES) != 0) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u has a uuid other than the first's; %s",
                        count, FIX);
        }
        if (h[32] || h[33] || h[34]) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u is compressed, encrypted or "
                        "checksummed, which beamtrace does not read: use babeltrace2", count);
        }
        if (h[35] != 1 || h[36] != 8) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u declares CTF %u.%u, not 1.8; %s", count,
                        h[35], h[36], FIX);
        }
        /* The last packet may be cut short (a copy taken while LTTng was
         * writing): its text up to the file's end is used, as babeltrace2 does. */
        if (content_bits % 8 == 0 && packet_bits % 8 == 0 && content_bits <= packet_bits &&
            content_bits >= METADATA_HEADER_BYTES * 8 && packet_bits / 8 > left) {
            size_t have = content_bits / 8 < left ? content_bits / 8 : left;
            memcpy(out + n, h + METADATA_HEADER_BYTES, have - METADATA_HEADER_BYTES);
            n += have - METADATA_HEADER_BYTES;
            break;
        }
        if (content_bits % 8 || packet_bits % 8 || content_bits < METADATA_HEADER_BYTES * 8 ||
            content_bits > packet_bits || packet_bits / 8 > left) {
            free(out);
            return fail(err, -EINVAL, "metadata packet %u at byte %zu declares %u content bits "
                        "in a %u-bit packet with %zu bytes left; %s", count, off, content_bits,
                        packet_bits, left, FIX);
        }
        size_t body = content_bits / 8 - METADATA_HEADER_BYTES;
        memcpy(out + n, h + METADATA_HEADER_BYTES, body);
        n += body;
        off += packet_bits / 8;
        count++;
    }
    out[n] = '\0';
    *text = out;
    *text_len = n;
    return 0;
}

static void *meta_alloc(struct bmt_meta *m, size_t size)
{
    return bmt_arena_alloc(&m->arena, size);
}

/* The first clock-mapped integer in `t` (depth-first), or -1. */
static int32_t first_clock(const struct bmt_ctf_type *t, unsigned depth)
{
    if (!t || depth > 64)
        return -1;
    if ((t->kind == BMT_CTF_INT || t->kind == BMT_CTF_ENUM) && t->clock >= 0)
        return t->clock;
    for (uint32_t i = 0; i < t->member_count; i++) {
        int32_t c = first_clock(t->members[i].type, depth + 1);
        if (c >= 0)
            return c;
    }
    return first_clock(t->elem, depth + 1);
}

static const char *kind_name(const struct bmt_ctf_type *t)
{
    switch (t->kind) {
    case BMT_CTF_INT: return "integer";
    case BMT_CTF_ENUM: return "enumeration";
    case BMT_CTF_FLOAT: return "float";
    case BMT_CTF_STRING: return "string";
    case BMT_CTF_STRUCT: return "struct";
    case BMT_CTF_ARRAY: return t->is_text ? "text array" : "array";
    case BMT_CTF_SEQUENCE: return t->is_text ? "text sequence" : "sequence";
    default: return "variant";
    }
}

/* babeltrace2's checks of the fields it gives meanings to (its
 * ctf-meta-validate.c): a trace it refuses is refused here too. */
static int check_uint(char *err, const char *scope, const struct bmt_ctf_type *root,
                      const char *name, unsigned size)
{
    const struct bmt_ctf_member *f = root ? bmt_ctf_member(root, name) : NULL;
    if (!f)
        return 0;
    const struct bmt_ctf_type *t = f->type;
    if ((t->kind != BMT_CTF_INT && t->kind != BMT_CTF_ENUM) || t->is_signed ||
        (size && t->size_bits != size))
        return fail(err, -EINVAL, "%s: `%s` is not an unsigned%s integer; %s", scope, name,
                    size == 32 ? " 32-bit" : "", FIX);
    return 0;
}

static int validate(const struct bmt_meta *m, char *err)
{
    const struct bmt_ctf_type *h = m->packet_header;
    int rc;
    if (h) {
        const struct bmt_ctf_member *magic = bmt_ctf_member(h, "magic");
        if (magic && magic != &h->members[0])
            return fail(err, -EINVAL, "trace.packet.header: `magic` is not the first field; %s", FIX);
        if ((rc = check_uint(err, "trace.packet.header", h, "magic", 32)) < 0 ||
            (rc = check_uint(err, "trace.packet.header", h, "stream_id", 0)) < 0 ||
            (rc = check_uint(err, "trace.packet.header", h, "stream_instance_id", 0)) < 0)
            return rc;
        const struct bmt_ctf_member *u = bmt_ctf_member(h, "uuid");
        if (u) {
            const struct bmt_ctf_type *e = u->type->elem;
            if (u->type->kind != BMT_CTF_ARRAY || u->type->length != 16 || e->kind != BMT_CTF_INT ||
                e->is_signed || e->size_bits != 8 || e->align_bits != 8)
                return fail(err, -EINVAL, "trace.packet.header: `uuid` is not an array of 16 "
                            "byte-aligned 8-bit unsigned integers; %s", FIX);
        }
    }
    if (m->stream_count > 1 && !(h && bmt_ctf_member(h, "stream_id")))
        return fail(err, -EINVAL, "several stream classes but no stream_id in the packet header; "
                    "%s", FIX);
    static const char *const ctx[] = {"timestamp_begin", "timestamp_end", "events_discarded",
                                      "packet_seq_num", "packet_size", "content_size"};
    for (unsigned i = 0; i < m->stream_count; i++) {
        const struct bmt_ctf_stream_class *c = m->streams[i];
        for (unsigned k = 0; k < sizeof ctx / sizeof ctx[0]; k++)
            if ((rc = check_uint(err, "stream.packet.context", c->packet_context, ctx[k], 0)) < 0)
                return rc;
        if ((rc = check_uint(err, "stream.event.header", c->event_header, "id", 0)) < 0 ||
            (rc = check_uint(err, "stream.event.header", c->event_header, "timestamp", 0)) < 0)
            return rc;
        if (c->event_count > 1 && !(c->event_header && bmt_ctf_member(c->event_header, "id")))
            return fail(err, -EINVAL, "stream %llu has several event classes but its event "
                        "header has no id; %s", (unsigned long long)c->id, FIX);
    }
    return 0;
}

/* Binds `ec` to the catalogue tracepoint of the same name, field by field. */
static int bind(struct bmt_meta *m, struct bmt_ctf_event_class *ec)
{
    ec->tp = BMT_TP_NONE;
    int tp = ec->name ? bmt_catalogue_find(ec->name) : -1;
    int ours = ec->name && (strncmp(ec->name, "org_erlang_dyntrace:", 20) == 0 ||
                            strncmp(ec->name, "org_erlang_beamtrace:", 21) == 0);
    char why[300] = "";
    if (tp < 0) {
        if (ours)
            snprintf(why, sizeof why, "event \"%s\" is not in beamtrace's catalogue (a newer "
                     "beamtrace wrote it?)", ec->name);
    } else {
        const struct bmt_tracepoint *c = &bmt_catalogue[tp];
        for (unsigned i = 0; i < c->field_count && !why[0]; i++) {
            const struct bmt_ctf_member *f = ec->fields ? bmt_ctf_member(ec->fields, c->fields[i].name)
                                                        : NULL;
            if (!f) {
                snprintf(why, sizeof why, "event \"%s\" has no field \"%s\"", ec->name,
                         c->fields[i].name);
                break;
            }
            const struct bmt_ctf_type *t = f->type;
            int want_str = c->fields[i].type == BMT_FIELD_STRING;
            int is_str = t->kind == BMT_CTF_STRING ||
                         ((t->kind == BMT_CTF_ARRAY || t->kind == BMT_CTF_SEQUENCE) && t->is_text);
            int is_int = t->kind == BMT_CTF_INT || t->kind == BMT_CTF_ENUM;
            if (want_str ? !is_str : !is_int) {
                snprintf(why, sizeof why, "event \"%s\" field \"%s\" is a %s where beamtrace "
                         "expects %s", ec->name, c->fields[i].name, kind_name(t),
                         want_str ? "a string" : "an integer");
                break;
            }
            ec->cat_slot[i] = t->slot;
        }
        if (!why[0]) {
            ec->tp = (uint16_t)tp;
            ec->cat_contiguous = 1;
            for (unsigned k = 1; k < c->field_count; k++)
                if (ec->cat_slot[k] != ec->cat_slot[0] + k)
                    ec->cat_contiguous = 0;
            m->catalogue_event_count++;
        }
    }
    if (why[0]) {
        ec->mismatch = bmt_arena_strndup(&m->arena, why, strlen(why));
        if (!ec->mismatch)
            return -ENOMEM;
        if (!m->warning) {
            m->warning = ec->mismatch;
        } else {
            /* Count the others in one line. */
            const char *w = m->warning;
            const char *more = strstr(w, " (and ");
            unsigned extra = more ? (unsigned)strtoul(more + 6, NULL, 10) + 1 : 1;
            char buf[400];
            snprintf(buf, sizeof buf, "%.*s (and %u more)", (int)(more ? more - w : (long)strlen(w)),
                     w, extra);
            if (!(m->warning = bmt_arena_strndup(&m->arena, buf, strlen(buf))))
                return -ENOMEM;
        }
    }
    return 0;
}

/* The clocks and environment of `t` into `m`; *clock_names_out: the
 * clocks' names by index (in m's arena). */
static int build_clocks_env(struct bmt_meta *m, struct bmt_tsdl *t, char *err,
                            const char ***clock_names_out)
{
    for (struct bmt_tsdl_clock *c = t->clocks; c; c = c->next)
        m->clock_count++;
    const char **clock_names = meta_alloc(m, (m->clock_count + 1) * sizeof *clock_names);
    m->clocks = meta_alloc(m, (m->clock_count + 1) * sizeof *m->clocks);
    if (!clock_names || !m->clocks)
        return -ENOMEM;
    unsigned i = 0;
    for (struct bmt_tsdl_clock *c = t->clocks; c; c = c->next, i++) {
        for (unsigned k = 0; k < i; k++)
            if (strcmp(m->clocks[k].name, c->clock.name) == 0)
                return fail(err, -EINVAL, "two clocks are named \"%s\"; %s", c->clock.name, FIX);
        m->clocks[i] = c->clock;
        clock_names[i] = c->clock.name;
    }
    for (struct bmt_tsdl_env *e = t->env; e; e = e->next)
        m->env_count++;
    if (!(m->env = meta_alloc(m, (m->env_count + 1) * sizeof *m->env)))
        return -ENOMEM;
    i = 0;
    for (struct bmt_tsdl_env *e = t->env; e; e = e->next, i++) {
        m->env[i] = e->env;
        if (strcmp(e->env.key, "hostname") == 0)
            m->hostname = e->env.str;
        else if (strcmp(e->env.key, "procname") == 0)
            m->procname = e->env.str;
        else if (strcmp(e->env.key, "vpid") == 0 && !e->env.str) {
            m->has_vpid = 1;
            m->vpid = e->env.integer;
        } else if (strcmp(e->env.key, "tracer_name") == 0 && e->env.str)
            m->tracer_is_lttng = strncmp(e->env.str, "lttng", 5) == 0;
    }

    *clock_names_out = clock_names;
    return 0;
}

/* The stream classes of `t` (one implicit class when the metadata declares
 * none), their scopes finished after the packet header's (`sc0`). */
static int build_streams(struct bmt_meta *m, struct bmt_tsdl *t, const struct bmt_ctf_scopes *sc0,
                         char *err)
{
    struct bmt_arena *a = &m->arena;
    char msg[BMT_META_ERROR_BYTES];
    struct bmt_tsdl_stream implicit = {0, 0, NULL, NULL, NULL, NULL};
    struct bmt_tsdl_stream *streams = t->streams ? t->streams : &implicit;
    for (struct bmt_tsdl_stream *s = streams; s; s = s->next)
        m->stream_count++;
    if (!(m->streams = meta_alloc(m, m->stream_count * sizeof *m->streams)))
        return -ENOMEM;
    unsigned i = 0;
    for (struct bmt_tsdl_stream *s = streams; s; s = s->next, i++) {
        struct bmt_ctf_stream_class *c = meta_alloc(m, sizeof *c);
        if (!c)
            return -ENOMEM;
        m->streams[i] = c;
        c->id = s->has_id ? s->id : 0;
        if (m->stream_count > 1 && !s->has_id)
            return fail(err, -EINVAL, "a stream block without an id among several; %s", FIX);
        for (unsigned k = 0; k < i; k++)
            if (m->streams[k]->id == c->id)
                return fail(err, -EINVAL, "two stream blocks have id %llu; %s",
                            (unsigned long long)c->id, FIX);
        bmt_u64map_init(&c->sparse);
        struct bmt_ctf_type *src[3] = {s->packet_context, s->event_header, s->event_context};
        struct bmt_ctf_type **dst[3] = {&c->packet_context, &c->event_header, &c->event_context};
        enum bmt_ctf_scope scope[3] = {BMT_SCOPE_PACKET_CONTEXT, BMT_SCOPE_EVENT_HEADER,
                                       BMT_SCOPE_EVENT_COMMON_CONTEXT};
        struct bmt_ctf_scopes sc = *sc0;
        uint32_t sslot = m->header_slots;
        for (int k = 0; k < 3; k++) {
            if (src[k] && !(*dst[k] = bmt_ctf_type_copy(a, src[k])))
                return -ENOMEM;
            sc.root[scope[k]] = *dst[k];
            int rc = bmt_ctf_finish_scope(a, &sc, scope[k], &sslot, msg, sizeof msg);
            if (rc < 0)
                return rc == -ENOMEM ? rc : fail(err, rc, "stream %llu: %s; %s",
                                                 (unsigned long long)c->id, msg, FIX);
        }
        c->stream_slots = c->slot_count = sslot;
        const struct bmt_ctf_type *h = c->event_header;
        if (!(c->header = bmt_decode_compile(a, &h, 1)) ||
            bmt_plan_header(a, c->event_header, &c->fast_header) < 0)
            return -ENOMEM;
        c->clock = first_clock(c->event_header, 0);
        if (c->clock < 0)
            c->clock = first_clock(c->packet_context, 0);
        if (c->clock < 0 && m->clock_count == 1)
            c->clock = 0;
    }

    return 0;
}

/* The event classes of `t`, each bound to its stream class. */
static int build_events(struct bmt_meta *m, struct bmt_tsdl *t, const struct bmt_ctf_scopes *sc0,
                        char *err)
{
    struct bmt_arena *a = &m->arena;
    char msg[BMT_META_ERROR_BYTES];
    for (struct bmt_tsdl_event *e = t->events; e; e = e->next)
        m->event_count++;
    if (!(m->events = meta_alloc(m, (m->event_count + 1) * sizeof *m->events)))
        return -ENOMEM;
    unsigned i = 0;
    for (struct bmt_tsdl_event *e = t->events; e; e = e->next, i++) {
        struct bmt_ctf_event_class *ec = meta_alloc(m, sizeof *ec);
        if (!ec)
            return -ENOMEM;
        m->events[i] = ec;
        ec->index = i;
        ec->name = e->name ? e->name : "";
        ec->id = e->has_id ? e->id : 0;
        struct bmt_ctf_stream_class *c = NULL;
        if (e->has_stream_id) {
            for (unsigned k = 0; k < m->stream_count; k++)
                if (m->streams[k]->id == e->stream_id)
                    c = m->streams[k];
        } else if (m->stream_count == 1) {
            c = m->streams[0];
        }
        if (!c)
            return fail(err, -EINVAL, "event \"%s\" names stream %llu, which is not declared; %s",
                        ec->name, (unsigned long long)e->stream_id, FIX);
        ec->stream_id = c->id;
        struct bmt_ctf_scopes sc = *sc0;
        sc.root[BMT_SCOPE_PACKET_CONTEXT] = c->packet_context;
        sc.root[BMT_SCOPE_EVENT_HEADER] = c->event_header;
        sc.root[BMT_SCOPE_EVENT_COMMON_CONTEXT] = c->event_context;
        uint32_t eslot = c->stream_slots;
        if ((e->context && !(ec->context = bmt_ctf_type_copy(a, e->context))) ||
            (e->fields && !(ec->fields = bmt_ctf_type_copy(a, e->fields))))
            return -ENOMEM;
        sc.root[BMT_SCOPE_EVENT_CONTEXT] = ec->context;
        sc.root[BMT_SCOPE_EVENT_FIELDS] = ec->fields;
        for (int k = BMT_SCOPE_EVENT_CONTEXT; k <= BMT_SCOPE_EVENT_FIELDS; k++) {
            int rc = bmt_ctf_finish_scope(a, &sc, (enum bmt_ctf_scope)k, &eslot, msg, sizeof msg);
            if (rc < 0)
                return rc == -ENOMEM ? rc : fail(err, rc, "event \"%s\": %s; %s", ec->name, msg,
                                                 FIX);
        }
        if (eslot > c->slot_count)
            c->slot_count = eslot;
        const struct bmt_ctf_type *body[3] = {c->event_context, ec->context, ec->fields};
        if (!(ec->body = bmt_decode_compile(a, body, 3)))
            return -ENOMEM;
        bmt_ctf_mark_printed(&sc);
        c->event_count++;
    }
    return 0;
}

/* Per stream class: its events, by id (a dense table, then a map). */
static int index_events(struct bmt_meta *m, const struct bmt_ctf_scopes *sc0, char *err)
{
    for (unsigned s = 0; s < m->stream_count; s++) {
        struct bmt_ctf_stream_class *c = m->streams[s];
        struct bmt_ctf_scopes sc = *sc0;
        sc.root[BMT_SCOPE_PACKET_CONTEXT] = c->packet_context;
        sc.root[BMT_SCOPE_EVENT_HEADER] = c->event_header;
        sc.root[BMT_SCOPE_EVENT_COMMON_CONTEXT] = c->event_context;
        bmt_ctf_mark_printed(&sc);
        if (!(c->events = meta_alloc(m, (c->event_count + 1) * sizeof *c->events)))
            return -ENOMEM;
        uint64_t max = 0;
        uint32_t n = 0;
        for (unsigned k = 0; k < m->event_count; k++) {
            if (m->events[k]->stream_id != c->id)
                continue;
            c->events[n++] = m->events[k];
            if (m->events[k]->id > max)
                max = m->events[k]->id;
        }
        c->dense_count = n ? (max < DENSE_IDS ? (uint32_t)max + 1 : DENSE_IDS) : 0;
        if (c->dense_count && !(c->by_id = meta_alloc(m, c->dense_count * sizeof *c->by_id)))
            return -ENOMEM;
        for (uint32_t k = 0; k < n; k++) {
            const struct bmt_ctf_event_class *ec = c->events[k];
            if (bmt_meta_event(c, ec->id))
                return fail(err, -EINVAL, "two events of stream %llu have id %llu (\"%s\" and "
                            "\"%s\"); %s", (unsigned long long)c->id, (unsigned long long)ec->id,
                            bmt_meta_event(c, ec->id)->name, ec->name, FIX);
            if (ec->id < c->dense_count) {
                c->by_id[ec->id] = c->events[k];
            } else {
                int created;
                uint32_t *v = bmt_u64map_get(&c->sparse, ec->id, k, &created);
                if (!v)
                    return -ENOMEM;
            }
        }
    }
    return 0;
}

static int build(struct bmt_meta *m, struct bmt_tsdl *t, char *err)
{
    struct bmt_arena *a = &m->arena;
    char msg[BMT_META_ERROR_BYTES];
    if (!t->has_trace || !t->has_byte_order)
        return fail(err, -EINVAL, "the metadata has no trace block with a byte_order; %s", FIX);
    if ((t->major && t->major != 1) || (t->minor && t->minor != 8))
        return fail(err, -EINVAL, "the metadata declares CTF %llu.%llu; beamtrace reads CTF 1.8: "
                    "use babeltrace2", (unsigned long long)t->major, (unsigned long long)t->minor);
    m->big_endian = t->big_endian;
    m->has_uuid = t->has_uuid;
    memcpy(m->uuid, t->uuid, sizeof m->uuid);

    const char **clock_names = NULL;
    int brc = build_clocks_env(m, t, err, &clock_names);
    if (brc < 0)
        return brc;

    /* The packet header. */
    struct bmt_ctf_scopes sc0;
    memset(&sc0, 0, sizeof sc0);
    sc0.clock_names = clock_names;
    sc0.clock_count = m->clock_count;
    sc0.big_endian = m->big_endian;
    uint32_t slot = 0;
    if (t->packet_header) {
        if (!(m->packet_header = bmt_ctf_type_copy(a, t->packet_header)))
            return -ENOMEM;
        sc0.root[BMT_SCOPE_PACKET_HEADER] = m->packet_header;
        int rc = bmt_ctf_finish_scope(a, &sc0, BMT_SCOPE_PACKET_HEADER, &slot, msg, sizeof msg);
        if (rc < 0)
            return rc == -ENOMEM ? rc : fail(err, rc, "%s; %s", msg, FIX);
    }
    m->header_slots = slot;

    if ((brc = build_streams(m, t, &sc0, err)) < 0 || (brc = build_events(m, t, &sc0, err)) < 0 ||
        (brc = index_events(m, &sc0, err)) < 0)
        return brc;
    int vrc = validate(m, err);
    if (vrc < 0)
        return vrc;
    /* The catalogue. */
    for (unsigned k = 0; k < m->event_count; k++) {
        int rc = bind(m, m->events[k]);
        if (rc < 0)
            return rc;
    }
    return 0;
}

int bmt_meta_parse(struct bmt_meta *m, const char *text, size_t len, char *err)
{
    memset(m, 0, sizeof *m);
    bmt_arena_init(&m->arena);
    err[0] = '\0';
    char *joined = NULL;
    uint8_t packet_uuid[BMT_CTF_UUID_BYTES];
    int packetized = 0;
    if (len >= 4 && (bmt_get_u32((const uint8_t *)text) == METADATA_PACKET_MAGIC ||
                     get32((const uint8_t *)text, 1) == METADATA_PACKET_MAGIC)) {
        size_t n = 0;
        int rc = unpacketize((const uint8_t *)text, len, &joined, &n, packet_uuid, err);
        if (rc < 0)
            return rc;
        /* babeltrace2 reads the joined text as a C string: it ends at the
         * first NUL byte (a zeroed page in a damaged copy, say). */
        const char *nul = memchr(joined, '\0', n);
        text = joined;
        len = nul ? (size_t)(nul - joined) : n;
        packetized = 1;
    } else {
        static const char header[] = "/* CTF 1.8";
        /* CTF 2 metadata is a JSON text sequence (RFC 7464: each record
         * starts with 0x1E); LTTng 2.14+ writes it by default. */
        if (len > 0 && text[0] == 0x1e)
            return fail(err, -EINVAL, "this is a CTF 2 trace (LTTng 2.14 and later record CTF 2 by "
                        "default); beamtrace reads CTF 1.8: record with 'lttng create "
                        "--trace-format=ctf-1.8'");
        if (len < sizeof header - 1 || memcmp(text, header, sizeof header - 1) != 0)
            return fail(err, -EINVAL, "the metadata file does not start with \"/* CTF 1.8\"; "
                        "this is not a CTF 1.8 trace, or its metadata was truncated or overwritten");
    }
    struct bmt_tsdl t;
    memset(&t, 0, sizeof t);
    char msg[BMT_META_ERROR_BYTES];
    int rc = bmt_tsdl_parse(&m->arena, text, len, &t, msg, sizeof msg);
    if (rc == -EINVAL)
        fail(err, rc, "%s; %s", msg, FIX);
    if (rc == 0)
        rc = build(m, &t, err);
    if (rc == 0 && packetized && m->has_uuid && memcmp(m->uuid, packet_uuid, sizeof packet_uuid))
        rc = fail(err, -EINVAL, "the metadata packets' uuid differs from the trace uuid; %s", FIX);
    if (rc == 0 && m->event_count == 0)
        rc = fail(err, -EINVAL, "the metadata declares no events; it is truncated or the tracer "
                  "had no event enabled");
    free(joined);
    return rc;
}

const struct bmt_ctf_stream_class *bmt_meta_stream(const struct bmt_meta *m, int has_id,
                                                   uint64_t id)
{
    if (!has_id)
        return m->stream_count == 1 ? m->streams[0] : NULL;
    for (unsigned i = 0; i < m->stream_count; i++)
        if (m->streams[i]->id == id)
            return m->streams[i];
    return NULL;
}

void bmt_meta_free(struct bmt_meta *m)
{
    for (unsigned i = 0; m->streams && i < m->stream_count; i++)
        if (m->streams[i])
            bmt_u64map_free(&m->streams[i]->sparse);
    bmt_arena_free(&m->arena);
    memset(m, 0, sizeof *m);
}
