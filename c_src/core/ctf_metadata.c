/* TSDL metadata for a beamtrace trace, derived from the catalogue.
 *
 * Shaped like LTTng-UST 2.13's own metadata (byte-packed integers, the same
 * packet context names, env domain = "ust") so babeltrace2 and Trace Compass
 * treat the trace as an LTTng UST trace. Field names get a leading '_' as
 * LTTng writes them; CTF readers strip it. Reentrant.
 */
#include "ctf.h"
#include "catalogue.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct out {
    char *buf;
    size_t size;
    size_t len;
    int overflow;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->size ? o->size - o->len : 0;
    int n = vsnprintf(o->buf + o->len, room, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= room)
        o->overflow = 1;
    else
        o->len += (size_t)n;
}

void bmt_ctf_uuid_text(const uint8_t u[BMT_CTF_UUID_BYTES], char out[37])
{
    snprintf(out, 37,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
             u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
             u[12], u[13], u[14], u[15]);
}

/* Escapes `s` for a TSDL string literal: only '"' and '\\' need it here. */
static void put_escaped(struct out *o, const char *s)
{
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            put(o, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            put(o, "%c", *s);
    }
}

static struct bmt_ctf_env_extra *env_slot(struct bmt_ctf_trace_info *info, const char *key,
                                          int *rc)
{
    size_t n = strlen(key);
    *rc = 0;
    if (n == 0 || (key[0] >= '0' && key[0] <= '9')) {
        *rc = -EINVAL;
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        if (!(key[i] == '_' || (key[i] >= 'a' && key[i] <= 'z') || (key[i] >= 'A' && key[i] <= 'Z') ||
              (key[i] >= '0' && key[i] <= '9'))) {
            *rc = -EINVAL;
            return NULL;
        }
    if (n >= sizeof info->env_extra[0].key || info->env_extra_count >= BMT_CTF_ENV_EXTRA_MAX) {
        *rc = -ENOSPC;
        return NULL;
    }
    struct bmt_ctf_env_extra *e = &info->env_extra[info->env_extra_count];
    memset(e, 0, sizeof *e);
    memcpy(e->key, key, n + 1);
    return e;
}

int bmt_ctf_env_add_text(struct bmt_ctf_trace_info *info, const char *key, const char *text)
{
    int rc;
    struct bmt_ctf_env_extra *e = env_slot(info, key, &rc);
    if (!e)
        return rc;
    size_t n = strlen(text);
    if (n >= sizeof e->text)
        return -ENOSPC;
    memcpy(e->text, text, n + 1);
    e->is_text = 1;
    info->env_extra_count++;
    return 0;
}

int bmt_ctf_env_add_int(struct bmt_ctf_trace_info *info, const char *key, int64_t value)
{
    int rc;
    struct bmt_ctf_env_extra *e = env_slot(info, key, &rc);
    if (!e)
        return rc;
    e->value = value;
    info->env_extra_count++;
    return 0;
}

static const char *field_type_tsdl(const struct bmt_field *f)
{
    switch (f->type) {
    case BMT_FIELD_STRING: return "string";
    case BMT_FIELD_U32: return "integer { size = 32; align = 8; signed = 0; encoding = none; base = 10; }";
    case BMT_FIELD_U64: return "integer { size = 64; align = 8; signed = 0; encoding = none; base = 10; }";
    case BMT_FIELD_S64: return "integer { size = 64; align = 8; signed = 1; encoding = none; base = 10; }";
    }
    return "string";
}

/* The env block: the host, the process, the node, its schedulers and the
 * caller's extra entries. */
static void put_env(struct out *o, const struct bmt_ctf_trace_info *info)
{
    put(o, "env {\n\thostname = \"");
    put_escaped(o, info->hostname);
    put(o, "\";\n\tdomain = \"ust\";\n\ttracer_name = \"lttng-ust\";\n"
            "\ttracer_major = 2;\n\ttracer_minor = 13;\n"
            "\ttracer_buffering_scheme = \"uid\";\n\tarchitecture_bit_width = 64;\n"
            "\ttrace_name = \"beamtrace\";\n\ttrace_creator = \"beamtrace\";\n"
            "\tbeamtrace_format = 1;\n\tbeamtrace_vpid = %lld;\n\tbeamtrace_procname = \"",
        (long long)info->vpid);
    put_escaped(o, info->procname);
    put(o, "\";\n\tbeamtrace_node = \"");
    put_escaped(o, info->node);
    put(o, "\";\n");
    /* Only when known: a trace without them (an older one, or a caller that
     * did not say) is read as "scheduler count unknown". */
    if (info->schedulers_count)
        put(o, "\tbeamtrace_schedulers = %u;\n\tbeamtrace_dirty_cpu_schedulers = %u;\n"
                "\tbeamtrace_dirty_io_schedulers = %u;\n",
            info->schedulers_count, info->dirty_cpu_schedulers_count,
            info->dirty_io_schedulers_count);
    if (info->schedulers_count && info->first_other_stream)
        put(o, "\tbeamtrace_first_dirty_cpu_stream = %u;\n\tbeamtrace_first_dirty_io_stream = %u;\n"
                "\tbeamtrace_first_other_stream = %u;\n",
            info->first_dirty_cpu_stream, info->first_dirty_io_stream, info->first_other_stream);
    for (unsigned i = 0; i < info->env_extra_count && i < BMT_CTF_ENV_EXTRA_MAX; i++) {
        const struct bmt_ctf_env_extra *e = &info->env_extra[i];
        if (e->is_text) {
            put(o, "\t%s = \"", e->key);
            put_escaped(o, e->text);
            put(o, "\";\n");
        } else {
            put(o, "\t%s = %lld;\n", e->key, (long long)e->value);
        }
    }
    put(o, "};\n\n");
}

/* One event declaration per catalogue row, its id the row's. */
static void put_events(struct out *o)
{
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *tp = &bmt_catalogue[i];
        put(o, "event {\n\tname = \"%s\";\n\tid = %d;\n\tstream_id = 0;\n"
                "\tloglevel = 13;\n\tfields := struct {\n",
            tp->full_name, i);
        for (unsigned f = 0; f < tp->field_count; f++)
            put(o, "\t\t%s _%s;\n", field_type_tsdl(&tp->fields[f]), tp->fields[f].name);
        put(o, "\t};\n};\n\n");
    }
}

long bmt_ctf_metadata(const struct bmt_ctf_trace_info *info, char *buf, size_t size)
{
    struct out o = {buf, size, 0, 0};
    char uuid[37];
    bmt_ctf_uuid_text(info->uuid, uuid);

    put(&o, "/* CTF 1.8 */\n\n");
    put(&o, "typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n");
    put(&o, "typealias integer { size = 16; align = 8; signed = false; } := uint16_t;\n");
    put(&o, "typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n");
    put(&o, "typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n");
    put(&o, "typealias integer { size = 64; align = 8; signed = false; } := unsigned long;\n\n");
    put(&o, "trace {\n\tmajor = 1;\n\tminor = 8;\n\tuuid = \"%s\";\n\tbyte_order = le;\n", uuid);
    put(&o, "\tpacket.header := struct {\n\t\tuint32_t magic;\n\t\tuint8_t  uuid[16];\n"
            "\t\tuint32_t stream_id;\n\t\tuint64_t stream_instance_id;\n\t};\n};\n\n");
    put_env(&o, info);
    put(&o, "clock {\n\tname = \"monotonic\";\n\tuuid = \"%s\";\n"
            "\tdescription = \"Monotonic Clock\";\n\tfreq = 1000000000; /* Frequency, in Hz */\n"
            "\t/* clock value offset from Epoch is: offset * (1/freq) */\n"
            "\toffset_s = %lld;\n\toffset = %lld;\n\tprecision = 0;\n\tabsolute = FALSE;\n};\n\n",
        uuid, (long long)info->clock_offset_s, (long long)info->clock_offset_ns);
    put(&o, "typealias integer {\n\tsize = 64; align = 8; signed = false;\n"
            "\tmap = clock.monotonic.value;\n} := uint64_clock_monotonic_t;\n\n");
    put(&o, "struct packet_context {\n\tuint64_clock_monotonic_t timestamp_begin;\n"
            "\tuint64_clock_monotonic_t timestamp_end;\n\tuint64_t content_size;\n"
            "\tuint64_t packet_size;\n\tuint64_t packet_seq_num;\n"
            "\tunsigned long events_discarded;\n\tuint32_t cpu_id;\n};\n\n");
    /* LTTng-UST's large event header (event.h), byte-packed. */
    put(&o, "typealias integer {\n\tsize = 32; align = 8; signed = false;\n"
            "\tmap = clock.monotonic.value;\n} := uint32_clock_monotonic_t;\n\n");
    put(&o, "struct event_header_large {\n"
            "\tenum : uint16_t { compact = 0 ... 65534, extended = 65535 } id;\n"
            "\tvariant <id> {\n"
            "\t\tstruct {\n\t\t\tuint32_clock_monotonic_t timestamp;\n\t\t} compact;\n"
            "\t\tstruct {\n\t\t\tuint32_t id;\n"
            "\t\t\tuint64_clock_monotonic_t timestamp;\n\t\t} extended;\n"
            "\t} v;\n} align(8);\n\n");
    put(&o, "stream {\n\tid = 0;\n\tevent.header := struct event_header_large;\n"
            "\tpacket.context := struct packet_context;\n};\n\n");

    put_events(&o);
    if (o.overflow)
        return -ENOSPC;
    return (long)o.len;
}
