/* Reading a trace's packets and events, in file order or merged in time
 * order (contract in reader.h; opening and closing: reader_open.c).
 *
 * Bounds discipline: decode.c checks every field against the packet's
 * content end (or the file's end while the packet header and context are
 * read); sizes read from the file are compared in their own units before
 * any addition, so a hostile 64-bit size cannot overflow an offset.
 * Memory: the file mappings are the only thing that grows with the trace,
 * and every stream hands its mapping back behind its current packet.
 */
#include "reader.h"
#include "core/catalogue.h"
#include "base/diag.h"
#include "decode.h"
#include "plan_run.h"
#include "reader_priv.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Give mapped pages back in steps of this many bytes (per stream): the
 * file pages a merge keeps resident are about this much per stream (8 MiB
 * steps kept 32 MiB of a 4-stream trace resident; a madvise call per 2 MiB
 * costs nothing measurable). */
#define RELEASE_BYTES (2u << 20)
/* A packet running past the end of its file is "the last packet, cut
 * short" when it is no larger than this or than four times the stream's
 * largest complete packet; a larger claim is corruption. */
#define PLAUSIBLE_PACKET_BYTES (64ull << 20)

int bmt_reader_fail(struct bmt_reader *r, int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->error, sizeof r->error, fmt, ap);
    va_end(ap);
    return rc;
}

void bmt_reader_warn(struct bmt_reader *r, const char *fmt, ...)
{
    va_list ap;
    if (r->quiet)
        return;
    bmt_progress_clear(&r->progress);
    va_start(ap, fmt);
    bmt_cli_line("beamtrace: warning: ", fmt, ap);
    va_end(ap);
}

static const char CORRUPT_FIX[] =
    "the file is damaged: copy the trace again, or move the damaged stream file out of the "
    "directory to read the rest";

/* ---- packets ---- */

/* Reader time of `cycles` of trace `t`'s clock; -1 when beyond
 * r->max_ts_ns. */
static int to_ns(const struct bmt_reader *r, const struct bmt_trace *t, uint64_t cycles,
                 uint64_t *ns)
{
    if (t->freq_hz == NS_PER_S) {
        uint64_t v;
        if (__builtin_add_overflow(cycles, t->delta_ns, &v) || v > r->max_ts_ns)
            return -1;
        *ns = v;
        return 0;
    }
    unsigned __int128 v = t->freq_hz == NS_PER_S
                              ? cycles
                              : (unsigned __int128)cycles * NS_PER_S / t->freq_hz;
    v += t->delta_ns;
    if (v > r->max_ts_ns)
        return -1;
    *ns = (uint64_t)v;
    return 0;
}

static void release_behind(struct bmt_reader_stream *s, uint64_t off)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    uint64_t upto = off & ~(uint64_t)(page - 1);
    if (upto < s->released_bytes + RELEASE_BYTES)
        return;
    madvise((void *)(uintptr_t)(s->map + s->released_bytes), upto - s->released_bytes,
            MADV_DONTNEED);
    s->released_bytes = upto;
}

/* The last packet of a stream runs past the end of the file: warn, skip it,
 * end the stream. */
static int cut_short(struct bmt_reader *r, struct bmt_reader_stream *s, uint64_t off,
                     uint64_t declared_bytes)
{
    uint64_t left = s->size_bytes - off;
    s->skipped_bytes += left;
    s->next_packet = s->size_bytes; /* the stream goes on in its next file, if any */
    s->pos_bits = s->content_bits = 0;
    if (declared_bytes)
        bmt_reader_warn(r, "%s: the last packet (byte %llu) is cut short: %llu of its %llu bytes "
                        "are in the file; skipped those %llu bytes (the recording was interrupted "
                        "or the copy is incomplete)", s->path, (unsigned long long)off,
                        (unsigned long long)left, (unsigned long long)declared_bytes,
                        (unsigned long long)left);
    else
        bmt_reader_warn(r, "%s: the file ends inside the last packet's header (byte %llu); "
                        "skipped its %llu bytes (the recording was interrupted or the copy is "
                        "incomplete)", s->path, (unsigned long long)off, (unsigned long long)left);
    return 0;
}

static const char *decode_reason(const struct bmt_decode *d)
{
    switch (d->error) {
    case BMT_DEC_NO_NUL: return "has no terminating NUL";
    case BMT_DEC_BAD_TAG: return "is a variant whose tag selects no option";
    case BMT_DEC_TOO_LONG: return "is an array of empty elements too long to be real";
    default: return "runs past the end";
    }
}

/* What the events of the packet just decoded (of stream class `sc`, its
 * header and context ending at bit `events_at`) share: the class's compiled
 * decoders, the cpu, the record's trace and stream. */
static void use_class(struct bmt_reader *r, struct bmt_reader_stream *s, unsigned idx,
                      const struct bmt_ctf_stream_class *sc, uint64_t events_at)
{
    const struct bmt_meta *m = &s->trace->meta;
    s->sc = sc;
    s->fast = NULL;
    s->fast_count = 0;
    /* Compiled decoders start on a byte. */
    for (unsigned k = 0; r->compiled && !(events_at & 7) && k < m->stream_count; k++)
        if (m->streams[k] == sc && s->trace->fast[k]) {
            s->fast = s->trace->fast[k];
            s->fast_count = sc->dense_count;
        }
    s->cpu_id = 0;
    if (sc->packet_context) {
        const struct bmt_ctf_member *cpu = bmt_ctf_member(sc->packet_context, "cpu_id");
        if (cpu && (cpu->type->kind == BMT_CTF_INT || cpu->type->kind == BMT_CTF_ENUM))
            s->cpu_id = (uint32_t)s->vals[cpu->type->slot].integer;
    }
    s->head.trace = s->trace_index;
    s->head.stream = idx;
    s->head.cpu_id = s->cpu_id;
}

/* Decodes the header and context of the packet at byte `off` of the
 * stream's file (`left` bytes to the file's end) into `d` and checks them:
 * magic, uuid, stream class (*scp). Returns 0, 1 when the file ends inside
 * them (the stream ends there: cut_short said so) or -EINVAL. */
static int read_packet_head(struct bmt_reader *r, struct bmt_reader_stream *s, uint64_t off,
                            uint64_t left, struct bmt_decode *d,
                            const struct bmt_ctf_stream_class **scp)
{
    const struct bmt_meta *m = &s->trace->meta;
    memset(d, 0, sizeof *d);
    d->base = s->map + off;
    d->end = left > UINT64_MAX / 8 ? UINT64_MAX : left * 8;
    d->vals = s->vals;
    d->clock = s->clock;
    if (m->packet_header && bmt_decode(d, m->packet_header) < 0) {
        /* Cut short inside the header: the file's last packet when it got
         * as far as a good magic number (or follows other packets). */
        if (d->error == BMT_DEC_PAST_END &&
            (off > 0 || (d->seen >> BMT_M_MAGIC & 1 && d->meaning[BMT_M_MAGIC] == BMT_CTF_MAGIC)))
            return cut_short(r, s, off, 0) == 0;
        return bmt_reader_fail(r, -EINVAL, "%s: the packet header at byte %llu %s of the file; %s", s->path,
                    (unsigned long long)off, d->error == BMT_DEC_PAST_END ? "runs past the end"
                                                                          : decode_reason(d),
                    off == 0 ? "this file is not a CTF stream: move it out of the trace directory"
                             : CORRUPT_FIX);
    }
    if ((d->seen >> BMT_M_MAGIC & 1) && d->meaning[BMT_M_MAGIC] != BMT_CTF_MAGIC)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu has magic 0x%08llx, not 0x%08x; %s",
                    s->path, (unsigned long long)off, (unsigned long long)d->meaning[BMT_M_MAGIC],
                    BMT_CTF_MAGIC,
                    off == 0 ? "this file is not a CTF stream: move it out of the trace directory"
                             : CORRUPT_FIX);
    if (d->uuid && m->has_uuid && memcmp(d->uuid, m->uuid, BMT_CTF_UUID_BYTES) != 0)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu has a uuid other than the metadata's; the "
                    "file belongs to another trace: move it to its own trace directory", s->path,
                    (unsigned long long)off);
    const struct bmt_ctf_stream_class *sc =
        bmt_meta_stream(m, d->seen >> BMT_M_STREAM_ID & 1, d->meaning[BMT_M_STREAM_ID]);
    if (!sc)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu names stream class %llu, which the "
                    "metadata does not declare; %s", s->path, (unsigned long long)off,
                    (unsigned long long)d->meaning[BMT_M_STREAM_ID], CORRUPT_FIX);
    if (sc->packet_context && bmt_decode(d, sc->packet_context) < 0) {
        if (d->error == BMT_DEC_PAST_END)
            return cut_short(r, s, off, 0) == 0;
        return bmt_reader_fail(r, -EINVAL, "%s: the packet context at byte %llu %s; %s", s->path,
                    (unsigned long long)off, decode_reason(d), CORRUPT_FIX);
    }
    *scp = sc;
    return 0;
}

/* The sizes of the packet at byte `off` (`left` bytes to the file's end)
 * whose header and context `d` holds, checked against the file. Returns 0,
 * 1 when the packet runs past the file's end by a plausible amount (the
 * stream ends there: cut_short said so) or -EINVAL. */
static int packet_sizes(struct bmt_reader *r, struct bmt_reader_stream *s, uint64_t off,
                        uint64_t left, const struct bmt_decode *d, uint64_t *packet_bytes,
                        uint64_t *content_bits)
{
    int has_p = d->seen >> BMT_M_PACKET_SIZE & 1, has_c = d->seen >> BMT_M_CONTENT_SIZE & 1;
    uint64_t packet_bits = d->meaning[BMT_M_PACKET_SIZE], content = d->meaning[BMT_M_CONTENT_SIZE];
    if (!has_p && !has_c)
        packet_bits = content = d->end; /* no sizes: the file is one packet */
    else if (!has_p)
        packet_bits = content;
    else if (!has_c)
        content = packet_bits;
    /* A size in bits that is not whole bytes: the next packet starts at the
     * byte below, but the partial byte must still be in the file (babeltrace2
     * reads it as padding). */
    if (packet_bits % 8 && packet_bits / 8 + 1 > left && packet_bits / 8 <= left)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu has a size of %llu bits, which runs past "
                    "the end of the file; %s", s->path, (unsigned long long)off,
                    (unsigned long long)packet_bits, CORRUPT_FIX);
    if (content > packet_bits || content < d->pos)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu declares %llu content bits in a %llu-bit "
                    "packet whose header and context take %llu; %s", s->path,
                    (unsigned long long)off, (unsigned long long)content,
                    (unsigned long long)packet_bits, (unsigned long long)d->pos, CORRUPT_FIX);
    uint64_t bytes = packet_bits / 8;
    if (bytes > left) {
        uint64_t plausible = s->largest_packet_bytes > PLAUSIBLE_PACKET_BYTES / 4
                                 ? 4 * s->largest_packet_bytes : PLAUSIBLE_PACKET_BYTES;
        if (bytes <= plausible)
            return cut_short(r, s, off, bytes) == 0;
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu declares %llu bytes but only %llu remain "
                    "in the file; %s", s->path, (unsigned long long)off,
                    (unsigned long long)bytes, (unsigned long long)left, CORRUPT_FIX);
    }
    if (bytes > s->largest_packet_bytes)
        s->largest_packet_bytes = bytes;
    *packet_bytes = bytes;
    *content_bits = content;
    return 0;
}

/* The times of the packet at byte `off` whose context `d` holds, checked
 * (no time goes backwards), into `info` (begin, end) and the stream's
 * clock. Returns 0 or -EINVAL. */
static int packet_times(struct bmt_reader *r, struct bmt_reader_stream *s, uint64_t off,
                        const struct bmt_decode *d, struct bmt_packet_info *info)
{
    /* timestamp_end 0 means "not known" (lttng-crash writes such packets);
     * babeltrace2 ignores it too. */
    int has_begin = d->seen >> BMT_M_TS_BEGIN & 1,
        has_end = (d->seen >> BMT_M_TS_END & 1) && d->meaning[BMT_M_TS_END] != 0;
    uint64_t begin_ns = s->last_ns, end_ns = UINT64_MAX;
    if ((has_begin && to_ns(r, s->trace, d->meaning[BMT_M_TS_BEGIN], &begin_ns) < 0) ||
        (has_end && to_ns(r, s->trace, d->meaning[BMT_M_TS_END], &end_ns) < 0))
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu has a time beyond what 64-bit nanoseconds "
                    "since the epoch can hold; %s", s->path, (unsigned long long)off, CORRUPT_FIX);
    if (s->packet_count && begin_ns < s->last_ns)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu begins %llu ns before the previous packet "
                    "or event of its stream: time goes backwards; %s", s->path,
                    (unsigned long long)off, (unsigned long long)(s->last_ns - begin_ns),
                    CORRUPT_FIX);
    if (has_end && end_ns < begin_ns)
        return bmt_reader_fail(r, -EINVAL, "%s: packet at byte %llu ends %llu ns before it begins: time goes "
                    "backwards; %s", s->path, (unsigned long long)off,
                    (unsigned long long)(begin_ns - end_ns), CORRUPT_FIX);
    if (has_begin)
        s->clock = d->meaning[BMT_M_TS_BEGIN];
    s->last_ns = begin_ns;
    s->packet_end_ns = end_ns;
    if (s->packet_count == 0) {
        s->first_packet_begin_ns = begin_ns;
        s->first_begin_pending = !has_begin;
    }
    info->ts_begin_ns = begin_ns;
    info->ts_end_ns = has_end ? end_ns : begin_ns;
    return 0;
}

/* Enters the packet at s->next_packet after validating its header and
 * context. Returns 0 (s->ended set when there is nothing more to read) or
 * -EINVAL. */
static int enter_packet(struct bmt_reader *r, struct bmt_reader_stream *s, unsigned idx)
{
    uint64_t off = s->next_packet, left = s->size_bytes - off;
    release_behind(s, off);
    bmt_progress_update(&r->progress, r->done_bytes, r->total_bytes);
    struct bmt_decode d;
    const struct bmt_ctf_stream_class *sc = NULL;
    uint64_t packet_bytes = 0, content_bits = 0;
    struct bmt_packet_info info;
    memset(&info, 0, sizeof info);
    int rc;
    if ((rc = read_packet_head(r, s, off, left, &d, &sc)) != 0 ||
        (rc = packet_sizes(r, s, off, left, &d, &packet_bytes, &content_bits)) != 0 ||
        (rc = packet_times(r, s, off, &d, &info)) != 0)
        return rc < 0 ? rc : 0;
    info.seq_num = d.meaning[BMT_M_SEQ_NUM];
    info.events_discarded = d.meaning[BMT_M_DISCARDED];
    info.first = s->packet_count == 0;
    s->has_seq = d.seen >> BMT_M_SEQ_NUM & 1;
    if (info.first) {
        s->stream_instance_id = d.meaning[BMT_M_STREAM_INSTANCE_ID];
        s->first_seq = info.seq_num;
        /* Packets are numbered from 0 per stream: a later first packet means
         * the oldest ones were overwritten (flight recorder). */
        info.lost_packet_count = s->has_seq ? info.seq_num : 0;
        info.prev_ts_end_ns = info.ts_begin_ns;
    } else {
        info.lost_packet_count =
            s->has_seq && info.seq_num > s->last_seq + 1 ? info.seq_num - s->last_seq - 1 : 0;
        info.prev_ts_end_ns = s->last_ts_end_ns;
    }
    info.new_discarded_count =
        info.events_discarded > s->discarded_count ? info.events_discarded - s->discarded_count : 0;
    s->discarded_count = info.events_discarded;
    s->lost_packet_count += info.lost_packet_count;
    s->last_seq = info.seq_num;
    s->last_ts_end_ns = info.ts_end_ns;
    s->packet_count++;
    use_class(r, s, idx, sc, d.pos);
    s->packet = off;
    s->pos_bits = d.pos;
    s->content_bits = content_bits;
    s->next_packet = off + packet_bytes;
    r->done_bytes += packet_bytes;
    if (r->on_packet)
        r->on_packet(r->on_packet_ctx, r, idx, &info);
    return 0;
}

/* ---- events ---- */

/* Why the event at the stream's cursor, whose time is `clock` cycles,
 * cannot be taken: -EINVAL with r->error set. */
static __attribute__((noinline)) int bad_time(struct bmt_reader *r, struct bmt_reader_stream *s,
                                              uint64_t clock)
{
    uint64_t ev_byte = s->packet + s->pos_bits / 8, ts;
    if (to_ns(r, s->trace, clock, &ts) < 0)
        return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu has a time beyond what 64-bit "
                    "nanoseconds since the epoch can hold; %s", s->path,
                    (unsigned long long)ev_byte, CORRUPT_FIX);
    if (ts < s->last_ns)
        return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu is %llu ns earlier than the previous "
                    "event or packet start of its stream: time goes backwards; %s", s->path,
                    (unsigned long long)ev_byte, (unsigned long long)(s->last_ns - ts),
                    CORRUPT_FIX);
    return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu is %llu ns later than its packet's "
                "end time; %s", s->path, (unsigned long long)ev_byte,
                (unsigned long long)(ts - s->packet_end_ns), CORRUPT_FIX);
}

#ifdef BMT_READER_POISON
/* Test builds: the fields a caller did not select hold values that fail
 * loudly when read (reader.h). */
static void poison(const struct bmt_reader *r, uint16_t tp, struct bmt_value *cat)
{
    uint32_t want = r->want.tp[tp];
    for (unsigned i = 0; i < bmt_catalogue[tp].field_count; i++)
        if (!(want >> i & 1))
            cat[i] = (struct bmt_value){NULL, UINT32_MAX, UINT64_C(0xbadbadbadbadbad0)};
}
#define POISONING 1
#else
#define poison(r, tp, cat) ((void)0)
#define POISONING 0
#endif

/* The event of class `ec` decoded from the stream's cursor to bit
 * `end_bits` of its packet, with the stream's clock now at `clock`: its
 * time checked, the stream moved past it and s->head filled. 1 or
 * -EINVAL. */
static inline __attribute__((always_inline)) int
take_event(struct bmt_reader *r, struct bmt_reader_stream *s,
           const struct bmt_ctf_event_class *ec, uint64_t clock, uint64_t end_bits,
           const struct bmt_value *values)
{
    struct bmt_record *rec = &s->head;
    uint64_t ts;
    if (__builtin_expect(to_ns(r, s->trace, clock, &ts) < 0 || ts < s->last_ns ||
                         ts > s->packet_end_ns, 0))
        return bad_time(r, s, clock);
    if (__builtin_expect(s->first_begin_pending, 0)) {
        s->first_packet_begin_ns = ts;
        s->first_begin_pending = 0;
    }
    s->clock = clock;
    s->last_ns = ts;
    rec->bits = (uint32_t)(end_bits - s->pos_bits);
    s->pos_bits = end_bits;
    rec->tp = ec->tp;
    rec->ts_ns = ts;                /* trace, stream and cpu_id: set per packet */
    rec->ec = ec;
    rec->values = values;
    return 1;
}

/* The compiled decoders (plan.h): 1 with the event taken, 0 when the
 * type-tree walk must decode it (a layout without a plan, or bytes the walk
 * may reject: it then gives the exact error), -EINVAL. */
static inline __attribute__((always_inline)) int
fast_event(struct bmt_reader *r, struct bmt_reader_stream *s)
{
    if (s->pos_bits & 7)
        return 0;
    const uint8_t *base = s->map + s->packet, *start = base + (s->pos_bits >> 3);
    const uint8_t *at = start, *end = base + (s->content_bits >> 3);
    uint64_t id, clock = s->clock;
    if (!(at = bmt_plan_run_header(s->sc->fast_header, base, at, end, &id, &clock)) ||
        id >= s->fast_count)
        return 0;
    const struct bmt_fast_event *f = &s->fast[id];
    if (!f->plan || !(at = bmt_plan_run_body(f->plan, base, at, end, s->cat)) || at == start)
        return 0;
    if (POISONING && f->ec->tp != BMT_TP_NONE)
        poison(r, f->ec->tp, s->cat);
    return take_event(r, s, f->ec, clock, (uint64_t)(at - base) * 8, s->cat);
}

/* Decodes the event at the stream's cursor into s->head by walking its
 * type tree. 1, 0 (the stream ended on a cut-short event) or -EINVAL. */
static __attribute__((noinline)) int walk_event(struct bmt_reader *r,
                                                struct bmt_reader_stream *s)
{
    const struct bmt_ctf_stream_class *sc = s->sc;
    struct bmt_decode d;
    d.base = s->map + s->packet;
    d.pos = s->pos_bits;
    d.end = s->content_bits;
    d.vals = s->vals;
    d.clock = s->clock;
    d.seen = 0;
    d.uuid = NULL;
    d.meaning[BMT_M_EVENT_ID] = 0;
    uint64_t ev_byte = s->packet + s->pos_bits / 8;
    const struct bmt_ctf_event_class *ec = NULL;
    const char *where = "header";
    if (bmt_decode_run(&d, sc->header) < 0)
        goto bad;
    ec = bmt_meta_event(sc, d.meaning[BMT_M_EVENT_ID]);
    if (!ec)
        return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu has id %llu, which the metadata does "
                    "not declare; %s", s->path, (unsigned long long)ev_byte,
                    (unsigned long long)d.meaning[BMT_M_EVENT_ID], CORRUPT_FIX);
    where = "fields";
    if (bmt_decode_run(&d, ec->body) < 0)
        goto bad;
    if (d.pos == s->pos_bits)
        return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu takes no bits (the metadata declares "
                    "an event without header or fields), so it cannot be read: use babeltrace2",
                    s->path, (unsigned long long)ev_byte);
    const struct bmt_value *values = s->cat;
    if (ec->tp != BMT_TP_NONE && ec->cat_contiguous && !(POISONING && r->selected)) {
        values = &s->vals[ec->cat_slot[0]];
    } else if (ec->tp != BMT_TP_NONE) {
        unsigned n = bmt_catalogue[ec->tp].field_count;
        for (unsigned i = 0; i < n; i++)
            s->cat[i] = s->vals[ec->cat_slot[i]];
        if (POISONING && r->selected)
            poison(r, ec->tp, s->cat);
    }
    return take_event(r, s, ec, d.clock, d.pos, values);
bad:
    /* An event cut at the end of the file, in the stream's last packet: the
     * recording (or the copy) stopped there. Read up to it, as babeltrace2
     * does, and say so. */
    if ((d.error == BMT_DEC_PAST_END || d.error == BMT_DEC_NO_NUL) &&
        s->packet + s->content_bits / 8 >= s->size_bytes && s->next_packet >= s->size_bytes) {
        s->next_packet = s->size_bytes;
        s->pos_bits = s->content_bits;
        s->skipped_bytes += s->size_bytes - ev_byte;
        bmt_reader_warn(r, "%s: the last event (byte %llu) is cut short by the end of the file; "
                        "skipped its %llu bytes (the recording was interrupted or the copy is "
                        "incomplete)", s->path, (unsigned long long)ev_byte,
                        (unsigned long long)s->skipped_bytes);
        return 0;
    }
    return bmt_reader_fail(r, -EINVAL, "%s: the event at byte %llu%s%s%s: its %s%s%s %s of its packet's "
                "content (byte %llu); %s", s->path, (unsigned long long)ev_byte,
                ec ? " (" : "", ec ? ec->name : "", ec ? ")" : "", where,
                d.error_field ? " field " : "", d.error_field ? d.error_field : "",
                decode_reason(&d), (unsigned long long)(s->packet + s->content_bits / 8),
                CORRUPT_FIX);
}

/* Advances stream `idx` to its next event (into its head), past packet and
 * file ends. `fast_tried`: the compiled decoder already declined the event
 * at the cursor. 1, 0 or -EINVAL. */
static __attribute__((noinline)) int advance_slow(struct bmt_reader *r, unsigned idx,
                                                  int fast_tried)
{
    struct bmt_reader_stream *s = &r->streams[idx];
    for (;; fast_tried = 0) {
        if (s->sc && s->pos_bits < s->content_bits) {
            int rc = s->fast && !fast_tried ? fast_event(r, s) : 0;
            if (rc == 0)
                rc = walk_event(r, s);
            if (rc != 0)
                return rc;
            continue; /* the stream ended on a cut-short event */
        }
        if (s->ended)
            return 0;
        if (s->next_packet >= s->size_bytes) {
            if (s->sc && s->packet_end_ns != UINT64_MAX)
                s->last_ns = s->packet_end_ns;
            s->sc = NULL;
            s->fast = NULL;
            if (s->file_index + 1 >= s->file_count) {
                s->ended = 1;
                return 0;
            }
            /* The stream goes on in its next file: hand this one back. */
            if (s->map)
                madvise((void *)(uintptr_t)s->map, s->size_bytes, MADV_DONTNEED);
            struct bmt_stream_file *f = &s->files[++s->file_index];
            s->path = f->path;
            const char *slash = strrchr(f->path, '/');
            s->file = slash ? slash + 1 : f->path;
            s->map = f->map;
            s->size_bytes = f->size_bytes;
            s->next_packet = s->released_bytes = 0;
            continue;
        }
        if (s->sc && s->packet_end_ns != UINT64_MAX)
            s->last_ns = s->packet_end_ns; /* the next packet must not begin before it */
        s->sc = NULL;
        s->fast = NULL;
        int rc = enter_packet(r, s, idx);
        if (rc < 0)
            return rc;
    }
}

/* advance_slow, with the usual case (the next event of the current
 * packet, with a compiled decoder) inline. */
static inline __attribute__((always_inline)) int advance(struct bmt_reader *r, unsigned idx)
{
    struct bmt_reader_stream *s = &r->streams[idx];
    if (s->fast && s->pos_bits < s->content_bits) {
        int rc = fast_event(r, s);
        if (rc != 0)
            return rc;
        return advance_slow(r, idx, 1);
    }
    return advance_slow(r, idx, 0);
}

int bmt_reader_stream_next(struct bmt_reader *r, unsigned stream, const struct bmt_record **rec)
{
    int rc = advance(r, stream);
    if (rc == 1)
        *rec = &r->streams[stream].head;
    else
        bmt_progress_clear(&r->progress);
    return rc;
}

/* Heap order: timestamp, then stream instance, then directory order. */
static inline int before(const struct bmt_reader *r, unsigned a, unsigned b)
{
    const struct bmt_reader_stream *sa = &r->streams[a], *sb = &r->streams[b];
    if (sa->head.ts_ns != sb->head.ts_ns)
        return sa->head.ts_ns < sb->head.ts_ns;
    if (sa->stream_instance_id != sb->stream_instance_id)
        return sa->stream_instance_id < sb->stream_instance_id;
    return a < b;
}

static void sift_down(struct bmt_reader *r, unsigned i)
{
    unsigned *h = r->heap, n = r->heap_count;
    for (;;) {
        unsigned l = 2 * i + 1, m = i;
        if (l < n && before(r, h[l], h[m]))
            m = l;
        if (l + 1 < n && before(r, h[l + 1], h[m]))
            m = l + 1;
        if (m == i)
            return;
        unsigned t = h[i];
        h[i] = h[m];
        h[m] = t;
        i = m;
    }
}

static void sift_up(struct bmt_reader *r, unsigned i)
{
    unsigned *h = r->heap;
    while (i > 0) {
        unsigned parent = (i - 1) / 2;
        if (!before(r, h[i], h[parent]))
            return;
        unsigned t = h[i];
        h[i] = h[parent];
        h[parent] = t;
        i = parent;
    }
}

/* Notes the time of the top's children: a top whose next event is earlier
 * stays on top with no comparison of streams. */
static inline void note_runner_up(struct bmt_reader *r)
{
    const unsigned *h = r->heap, n = r->heap_count;
    uint64_t a = n > 1 ? r->streams[h[1]].head.ts_ns : UINT64_MAX;
    uint64_t b = n > 2 ? r->streams[h[2]].head.ts_ns : UINT64_MAX;
    r->runner_up_ns = a < b ? a : b;
}

/* bmt_reader_next but for the usual case: the merge's start, a stream
 * that needs the type-tree walk or a new packet, the end, a cluster. */
static __attribute__((noinline)) int next_slow(struct bmt_reader *r, const struct bmt_record **rec,
                                               int fast_tried)
{
    int rc;
    if (!r->merge_started) {
        r->merge_started = 1;
        for (unsigned i = 0; i < r->stream_count; i++) {
            if ((rc = advance_slow(r, i, 0)) < 0)
                return rc;
            if (rc == 1) {
                r->heap[r->heap_count++] = i;
                sift_up(r, r->heap_count - 1);
            }
            const struct bmt_reader_stream *s = &r->streams[i];
            if (s->packet_count && s->has_seq && s->first_seq > 0) {
                r->overwritten = 1;
                if (s->first_packet_begin_ns > r->complete_from_ns)
                    r->complete_from_ns = s->first_packet_begin_ns;
            }
        }
    } else if (r->popped >= 0) {
        /* The stream returned last is still on top: refill it in place. */
        if ((rc = advance_slow(r, (unsigned)r->popped, fast_tried)) < 0)
            return rc;
        if (rc == 0)
            r->heap[0] = r->heap[--r->heap_count];
        if (r->heap_count)
            sift_down(r, 0);
    }
    if (r->heap_count == 0) {
        r->popped = -1;
        bmt_progress_clear(&r->progress);
        return 0;
    }
    r->popped = (int)r->heap[0];
    note_runner_up(r);
    *rec = &r->streams[r->popped].head;
    if (r->cluster && (*rec)->tp != BMT_TP_NONE) {
        const struct bmt_value *v = bmt_nodes_qualify(&r->nodes, (*rec)->trace, (*rec)->tp,
                                                      (*rec)->values, r->want.tp[(*rec)->tp]);
        if (!v)
            return bmt_reader_fail(r, -ENOMEM, "out of memory; free some memory");
        r->qrec = **rec;
        r->qrec.values = v;
        *rec = &r->qrec;
    }
    return 1;
}

int bmt_reader_next(struct bmt_reader *r, const struct bmt_record **rec)
{
    /* The usual case: the stream returned last has its next event in the
     * same packet, with a compiled decoder. */
    int p = r->popped, rc;
    if (p < 0 || r->cluster)
        return next_slow(r, rec, 0);
    struct bmt_reader_stream *s = &r->streams[p];
    if (!s->fast || s->pos_bits >= s->content_bits)
        return next_slow(r, rec, 0);
    if ((rc = fast_event(r, s)) == 0)
        return next_slow(r, rec, 1);
    if (rc < 0)
        return rc;
    /* Still the earliest (most events follow one of their stream): no
     * sift; a tie is settled by the streams' order. */
    if (__builtin_expect(s->head.ts_ns >= r->runner_up_ns, 0)) {
        unsigned n = r->heap_count, *h = r->heap;
        if (n > 1 && (before(r, h[1], h[0]) || (n > 2 && before(r, h[2], h[0])))) {
            sift_down(r, 0);
            p = r->popped = (int)h[0];
            note_runner_up(r);
        }
    }
    *rec = &r->streams[p].head;
    return 1;
}
