/* One pass over a trace (contract in run.h). */
#include "run.h"
#include "base/timefmt.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* More than this between the first and last events is no real recording. */
#define ODD_SPAN_NS (30ull * 86400 * 1000000000)

static void span_text(uint64_t ns, char out[48])
{
    double d = (double)ns / 1e9;
    if (d >= 365.25 * 86400)
        snprintf(out, 48, "%.1f years", d / (365.25 * 86400));
    else
        snprintf(out, 48, "%.1f days", d / 86400);
}

/* The events the scope itself takes: the names' (their fields are
 * bmt_names_fields) and the events counted for "the trace lacks" notes. */
static const struct bmt_needs scope_needs = {{
    BMT_NEED(process_info, 0), BMT_NEED(process_spawn, 0), BMT_NEED(process_register, 0),
    BMT_NEED(process_scheduled, 0), BMT_NEED(message_receive, 0),
    BMT_NEED(message_receive_link, 0), BMT_NEED(gc_minor_start, 0),
    BMT_NEED(gc_major_start, 0), BMT_NEED(function_call, 0),
    BMT_NEED(sample_ratio, BMT_FIELD(sample_ratio, kind) | BMT_FIELD(sample_ratio, ratio)),
}, 0};

#define TP_BIT(tp) (UINT64_C(1) << BMT_TP_##tp)
#define NAME_TPS (TP_BIT(process_info) | TP_BIT(process_spawn) | TP_BIT(process_register))

/* The most fields own_involved reads in one event (a field set's 16
 * bits), and the end of a list of them. */
#define OWN_FIELDS_MAX 16
#define OWN_END 0xff

/* Which accumulators take each event: as it is (raw), or a link event as
 * OTP's message_send / message_receive (renamed). Bit i: subs[i]. */
struct plan {
    const struct bmt_an_sub *subs;
    unsigned n;
    uint32_t raw[BMT_TP_COUNT];
    uint32_t renamed[BMT_TP_COUNT]; /* by variant: accumulators fed it as OTP's event */
    uint64_t inside[BMT_TP_COUNT]; /* events from the window's begin, by tracepoint */
    int runs;                      /* an accumulator takes scheduling events: feed runs.h */
    int8_t actor[BMT_TP_COUNT];    /* per tracepoint: its process field (bmt_runs_actor), or -1 */
    uint8_t own[BMT_TP_COUNT][OWN_FIELDS_MAX + 1]; /* per tracepoint: the fields own_involved
                                                      reads besides the actor, OWN_END-terminated */
};

/* The variants recorded instead of OTP's events (message links, results,
 * arguments): the same first fields, in OTP's order (layouts.h). An
 * accumulator that reads OTP's event only gets the variant as it. */
static const struct {
    uint16_t variant, otp;
} VARIANTS[] = {
    {BMT_TP_message_send_link, BMT_TP_message_send},
    {BMT_TP_message_receive_link, BMT_TP_message_receive},
    {BMT_TP_function_result, BMT_TP_function_return},
    {BMT_TP_function_call_args, BMT_TP_function_call},
};
#define VARIANT_COUNT (sizeof VARIANTS / sizeof VARIANTS[0])
_Static_assert(BMT_F_function_result_entry == BMT_F_function_return_entry &&
                   BMT_F_function_call_args_entry == BMT_F_function_call_entry &&
                   BMT_F_function_result_pid == BMT_F_function_return_pid &&
                   BMT_F_function_call_args_pid == BMT_F_function_call_pid,
               "the call variants start with OTP's fields");

static int is_variant(uint16_t tp)
{
    for (unsigned i = 0; i < VARIANT_COUNT; i++)
        if (VARIANTS[i].variant == tp)
            return 1;
    return 0;
}

static void want(struct bmt_an_scope *scope, uint16_t tp, uint16_t fields)
{
    scope->want[tp] |= fields;
}

static void own_note(struct bmt_an_scope *s, const char *str, size_t len)
{
    unsigned m = bmt_strtab_mark(str, len);
    s->own_marks[m >> 6] |= UINT64_C(1) << (m & 63);
}

/* beamtrace's own processes (scope.h): learns one own_process event. */
static int own_learn(struct bmt_an_scope *s, const struct bmt_record *rec)
{
    const struct bmt_value *pid = &rec->values[BMT_F_own_process_pid],
                           *name = &rec->values[BMT_F_own_process_name];
    if (bmt_strtab_intern(&s->own, pid->str, pid->len) < 0)
        return -ENOMEM;
    own_note(s, pid->str, pid->len);
    if (name->len && !(name->len == 9 && memcmp(name->str, "undefined", 9) == 0) &&
        bmt_strtab_intern(&s->own, name->str, name->len) < 0)
        return -ENOMEM;
    if (name->len)
        own_note(s, name->str, name->len);
    return 0;
}

/* The fields own_involved reads: every process field (kind ID) and a
 * send's destination. */
_Static_assert(BMT_F_message_send_to == BMT_F_message_send_link_to,
               "a send's destination is at one place in both send events");
static uint16_t own_fields(uint16_t tp)
{
    const struct bmt_tracepoint *t = &bmt_catalogue[tp];
    uint16_t f = 0;
    for (unsigned i = 0; i < t->field_count; i++)
        if (t->fields[i].kind == BMT_KIND_ID ||
            ((tp == BMT_TP_message_send || tp == BMT_TP_message_send_link) &&
             i == BMT_F_message_send_to))
            f |= (uint16_t)(1u << i);
    return f;
}

/* own_fields(tp) but its actor field (the check tests that one by the
 * mark feed_event computes for runs too) as a list of field indices,
 * OWN_END-terminated: the per-event check walks it instead of every bit. */
static void own_list(uint16_t tp, int actor, uint8_t out[OWN_FIELDS_MAX + 1])
{
    unsigned n = 0;
    for (unsigned i = 0, f = own_fields(tp); f; i++, f >>= 1)
        if ((f & 1) && (int)i != actor && n < OWN_FIELDS_MAX)
            out[n++] = (uint8_t)i;
    out[n] = OWN_END;
}

static inline int own_marked(const struct bmt_an_scope *s, unsigned m)
{
    return s->own_marks[m >> 6] >> (m & 63) & 1;
}

/* 1 when one of beamtrace's own processes takes part in `rec`: its actor
 * `act` (of mark `mark`, BMT_RUNS_NO_MARK for none) or another process
 * field. */
static int own_involved(const struct plan *p, const struct bmt_an_scope *s,
                        const struct bmt_record *rec, const struct bmt_value *act, unsigned mark)
{
    /* Only the fields the pass selected are valid (ctf/reader.h): every
     * event read has its process fields selected (make_plan); an event no
     * one asked for reaches nobody. */
    if (!s->want[rec->tp])
        return 0;
    if (mark < BMT_RUNS_NO_MARK && own_marked(s, mark) &&
        bmt_strtab_find(&s->own, act->str, act->len) >= 0)
        return 1;
    for (const uint8_t *f = p->own[rec->tp]; *f != OWN_END; f++) {
        const struct bmt_value *v = &rec->values[*f];
        if (!v->str)
            continue;
        unsigned m = bmt_strtab_mark(v->str, v->len);
        if (own_marked(s, m) && bmt_strtab_find(&s->own, v->str, v->len) >= 0)
            return 1;
    }
    return 0;
}

/* The plan and scope->want from every accumulator's declaration. */
static void make_plan(struct plan *p, struct bmt_an_scope *scope)
{
    memset(scope->want, 0, sizeof scope->want);
    for (uint16_t tp = 0; tp < BMT_TP_COUNT; tp++)
        want(scope, tp, scope_needs.fields[tp] | (uint16_t)bmt_names_fields.tp[tp]);
    want(scope, BMT_TP_own_process,
         BMT_NEED_EVENT | BMT_FIELD(own_process, pid) | BMT_FIELD(own_process, name));
    for (unsigned i = 0; i < p->n; i++) {
        const struct bmt_needs *nd = p->subs[i].acc->needs;
        uint32_t bit = UINT32_C(1) << i;
        for (uint16_t tp = 0; tp < BMT_TP_COUNT; tp++) {
            uint16_t f = nd->fields[tp] | (nd->all_events ? BMT_NEED_EVENT : 0);
            if (f && (!is_variant(tp) || nd->fields[tp])) {
                p->raw[tp] |= bit;
                want(scope, tp, f);
            }
        }
        /* Variants to an accumulator that reads OTP's events only. */
        for (unsigned v = 0; v < VARIANT_COUNT; v++) {
            uint16_t f = nd->fields[VARIANTS[v].otp] | (nd->all_events ? BMT_NEED_EVENT : 0);
            if (f && !nd->fields[VARIANTS[v].variant]) {
                p->renamed[VARIANTS[v].variant] |= bit;
                want(scope, VARIANTS[v].variant, f);
            }
        }
    }
    /* Run intervals (runs.h) end at a process's last event: when an
     * accumulator takes scheduling events, every event's process is read. */
    p->runs = 0;
    for (unsigned i = 0; i < p->n; i++)
        p->runs |= p->subs[i].acc->needs->fields[BMT_TP_process_scheduled] != 0;
    for (uint16_t tp = 0; p->runs && tp < BMT_TP_COUNT; tp++)
        if (bmt_runs_fields(tp))
            want(scope, tp, BMT_NEED_EVENT | bmt_runs_fields(tp));
    /* Every event read is checked for beamtrace's own processes. */
    for (uint16_t tp = 0; tp < BMT_TP_COUNT; tp++) {
        p->actor[tp] = (int8_t)bmt_runs_actor(tp);
        own_list(tp, p->actor[tp], p->own[tp]);
        if (scope->want[tp])
            want(scope, tp, own_fields(tp));
    }
}

/* The reader decodes the fields the pass reads (scope->want) and skips
 * the others: the analyses' speed depends on it (issue 17). */
static int select_fields(struct bmt_reader *r, const struct bmt_an_scope *scope)
{
    struct bmt_field_set f;
    for (unsigned tp = 0; tp < BMT_TP_COUNT; tp++)
        f.tp[tp] = scope->want[tp] & (uint16_t)~BMT_NEED_EVENT;
    return bmt_reader_select(r, &f);
}

static int dispatch(const struct plan *p, uint32_t subs, const struct bmt_record *rec)
{
    for (; subs; subs &= subs - 1) {
        const struct bmt_an_sub *s = &p->subs[__builtin_ctz(subs)];
        int rc = s->acc->feed(s->self, rec);
        if (rc < 0)
            return rc;
    }
    return 0;
}

static void on_packet(void *ctx, const struct bmt_reader *r, unsigned stream,
                      const struct bmt_packet_info *info)
{
    const struct plan *p = ctx;
    for (unsigned i = 0; i < p->n; i++)
        if (p->subs[i].acc->packet)
            p->subs[i].acc->packet(p->subs[i].self, r, stream, info);
}

/* A capture's metadata: the ratios in force where its window begins
 * (beamtrace_sample_<kind>). */
static void note_sampled_env(struct bmt_reader *r, struct bmt_an_scope *scope)
{
    for (unsigned t = 0; t < r->trace_count; t++) {
        const struct bmt_meta *m = &r->traces[t].meta;
        for (unsigned i = 0; i < m->env_count; i++)
            if (!m->env[i].str && strncmp(m->env[i].key, "beamtrace_sample_", 17) == 0 &&
                m->env[i].integer > 1)
                bmt_sampled_set(&scope->sampled, m->env[i].key + 17,
                                strlen(m->env[i].key + 17), (uint64_t)m->env[i].integer,
                                scope->sampled.begin_ns);
    }
}

/* One event: the names, the scope's counts, then the accumulators; none
 * of them for an event one of beamtrace's own processes takes part in. */
static int feed_event(struct plan *p, struct bmt_an_scope *scope,
                      const struct bmt_record *rec)
{
    uint64_t bit = UINT64_C(1) << rec->tp;
    int rc;
    if (rec->tp == BMT_TP_own_process)
        return own_learn(scope, rec);
    /* The actor's fingerprint, once for both checks below. */
    int af = p->actor[rec->tp];
    const struct bmt_value *act = af >= 0 ? &rec->values[af] : NULL;
    unsigned mark = act && act->str ? bmt_strtab_mark(act->str, act->len) : BMT_RUNS_NO_MARK;
    if (scope->own.count && own_involved(p, scope, rec, act, mark)) {
        scope->own_hidden_count++;
        return 0;
    }
    bmt_names_event(&scope->names);
    if (p->runs && (rc = bmt_runs_feed(&scope->runs, &scope->names, rec, act, mark)) < 0)
        return rc;
    if ((bit & NAME_TPS) && (rc = bmt_names_feed(&scope->names, rec)) < 0)
        return rc;
    p->inside[rec->tp] += rec->ts_ns >= scope->window.begin_ns;
    if (rec->tp == BMT_TP_sample_ratio)
        bmt_sampled_set(&scope->sampled, rec->values[BMT_F_sample_ratio_kind].str,
                        rec->values[BMT_F_sample_ratio_kind].len,
                        rec->values[BMT_F_sample_ratio_ratio].integer, rec->ts_ns);
    if ((rc = dispatch(p, p->raw[rec->tp], rec)) < 0)
        return rc;
    uint32_t renamed = p->renamed[rec->tp];
    if (!renamed)
        return 0;
    struct bmt_record otp = *rec;
    for (unsigned v = 0; v < VARIANT_COUNT; v++)
        if (VARIANTS[v].variant == rec->tp)
            otp.tp = VARIANTS[v].otp;
    return dispatch(p, renamed, &otp);
}

void bmt_an_warn_incomplete(struct bmt_reader *r, const char *dir)
{
    for (unsigned s = 0; s < r->stream_count; s++) {
        const struct bmt_reader_stream *st = &r->streams[s];
        const char *path = st->file_count ? st->files[0].path : "";
        const char *base = strrchr(path, '/');
        if (strcmp(base ? base + 1 : path, "channel0_incomplete") == 0) {
            bmt_reader_warn(r, "%s: incomplete: the recording did not end (its VM was killed, or "
                            "it is still being written); what was not on disk yet is counted as "
                            "discarded", dir);
            return;
        }
    }
}

/* Opens the traces, resolves the filter and the window, says what is odd
 * about the trace; *rec is the first event (rc 1) or none (rc 0). */
static int open_pass(struct bmt_reader *r, struct plan *p, struct bmt_an_scope *scope,
                     const struct bmt_record **rec)
{
    const char *dir = scope->label;
    int rc = scope->filtering ? bmt_an_scope_filter(scope, r) : 0;
    if (rc < 0 || (rc = bmt_reader_open(r, scope->paths, scope->path_count)) < 0 ||
        (rc = select_fields(r, scope)) < 0 || (rc = bmt_runs_open(&scope->runs, r)) < 0)
        return rc;
    for (unsigned i = 0; i < p->n; i++)
        if (p->subs[i].acc->packet) { /* before the first packet is entered */
            r->on_packet = on_packet;
            r->on_packet_ctx = p;
        }
    for (unsigned t = 0; t < r->trace_count; t++)
        if (r->traces[t].meta.warning)
            bmt_reader_warn(r, "%s: %s; analyses ignore its events", dir,
                            r->traces[t].meta.warning);
    bmt_an_warn_incomplete(r, dir);
    if ((rc = bmt_reader_next(r, rec)) < 0)
        return rc;
    scope->first_ns = rc == 1 ? (*rec)->ts_ns : 0;
    int wrc = bmt_an_scope_window(scope, r);
    if (wrc < 0)
        return wrc;
    bmt_sampled_reset(&scope->sampled, scope->window.begin_ns > scope->first_ns
                                           ? scope->window.begin_ns : scope->first_ns);
    note_sampled_env(r, scope);
    if (r->overwritten) {
        char t[32];
        bmt_clock_text(bmt_reader_wall_ns(r, r->complete_from_ns), t);
        bmt_reader_warn(r, "%s: a flight-recorder trace whose streams lost their oldest packets: "
                        "calls and intervals are counted from %s, where every stream has data",
                        dir, t);
    }
    return rc;
}

/* Once: events further apart than any real recording. */
static void warn_span(struct bmt_reader *r, const struct bmt_an_scope *scope, uint64_t ts)
{
    char a[64], b[64], span[48];
    bmt_date_text(bmt_reader_wall_ns(r, scope->first_ns), a);
    bmt_date_text(bmt_reader_wall_ns(r, ts), b);
    span_text(ts - scope->first_ns, span);
    bmt_reader_warn(r, "%s: events %s apart (the first at %s, one at %s): a corrupt or unusual "
                    "trace; results may mean little", scope->label, span, a, b);
}

/* Says that the trace is sampled, for how much of the window, and which
 * of the pass's analyses scale their counts and totals back. */
static void warn_sampled(struct bmt_reader *r, const struct plan *p,
                         struct bmt_an_scope *scope, const struct bmt_an_pass *pass)
{
    struct bmt_sampled *sd = &scope->sampled;
    uint64_t span = pass->end_ns > sd->begin_ns ? pass->end_ns - sd->begin_ns : 0;
    double pct = span ? 100.0 * (double)bmt_sampled_ns(sd, pass->end_ns) / (double)span : 0.0;
    char scaled[256] = "", unscaled[256] = "";
    unsigned at[2] = {0, 0};
    for (unsigned i = 0; i < p->n; i++) {
        int k = p->subs[i].acc->scales;
        if (k == BMT_SCALES_NOTHING)
            continue; /* none of its events is of a kind sampled */
        k = k == BMT_SCALES;
        char *list = k ? scaled : unscaled;
        if (at[k] + 40 < sizeof scaled)
            at[k] += (unsigned)snprintf(list + at[k], sizeof scaled - at[k], "%s%s",
                                        at[k] ? ", " : "", p->subs[i].acc->name);
    }
    sd->scaled = !unscaled[0];
    if (!scaled[0] && !unscaled[0]) {
        bmt_reader_warn(r, "%s: sampled 1/%u (at most; of its %s events) for %.0f%% of the "
                        "trace; this analysis reads none of those kinds", scope->label,
                        sd->ratio_max, sd->kinds, pct > 100.0 ? 100.0 : pct);
        return;
    }
    if (!scaled[0]) {
        bmt_reader_warn(r, "%s: sampled 1/%u (at most; of its %s events) for %.0f%% of the "
                        "trace; the counts and totals of %s are of the events kept (not scaled "
                        "back)", scope->label, sd->ratio_max, sd->kinds,
                        pct > 100.0 ? 100.0 : pct, unscaled);
        return;
    }
    bmt_reader_warn(r, "%s: sampled 1/%u (at most; of its %s events) for %.0f%% of the trace; "
                    "counts and totals%s%s are scaled back by the ratio in force at each event, "
                    "percentiles are as measured (unbiased under uniform sampling)%s%s%s",
                    scope->label, sd->ratio_max, sd->kinds, pct > 100.0 ? 100.0 : pct,
                    unscaled[0] ? " of " : "", unscaled[0] ? scaled : "",
                    unscaled[0] ? "; those of " : "", unscaled,
                    unscaled[0] ? " are of the events kept" : "");
}

/* After the pass: where open intervals close, the losses, finish(). */
static int end_pass(struct bmt_reader *r, const struct plan *p, struct bmt_an_scope *scope,
                    struct bmt_an_pass *pass, int past_end)
{
    pass->end_ns = past_end ? scope->window.end_ns : pass->last_ns;
    bmt_names_event(&scope->names); /* finish() looks up no event's text */
    for (unsigned s = 0; s < r->stream_count; s++) {
        pass->discarded_count += r->streams[s].discarded_count;
        pass->lost_packet_count += r->streams[s].lost_packet_count;
    }
    const uint64_t *in = p->inside;
    scope->sched_count += in[BMT_TP_process_scheduled];
    scope->receive_count += in[BMT_TP_message_receive] + in[BMT_TP_message_receive_link];
    scope->gc_count += in[BMT_TP_gc_minor_start] + in[BMT_TP_gc_major_start];
    scope->call_count += in[BMT_TP_function_call];
    if (pass->discarded_count)
        bmt_reader_warn(r, "%s: %llu events were discarded while recording; stacks and times "
                        "around the losses may be wrong", scope->label,
                        (unsigned long long)pass->discarded_count);
    if (scope->sampled.ratio_max)
        warn_sampled(r, p, scope, pass);
    for (unsigned i = 0; i < p->n; i++) {
        const struct bmt_an_sub *s = &p->subs[i];
        int rc = s->acc->finish ? s->acc->finish(s->self, pass) : 0;
        if (rc < 0)
            return rc;
    }
    bmt_runs_finish(&scope->runs);
    return 0;
}

int bmt_an_run(struct bmt_reader *r, struct bmt_an_scope *scope, const struct bmt_an_sub *subs,
               unsigned n, struct bmt_an_pass *pass)
{
    struct plan p = {.subs = subs, .n = n < BMT_AN_MAX_SUBS ? n : BMT_AN_MAX_SUBS};
    const struct bmt_record *rec;
    memset(pass, 0, sizeof *pass);
    scope->filtering = scope->pid_count + scope->pattern_count > 0;
    scope->windowed = scope->begin_text || scope->end_text;
    make_plan(&p, scope);
    bmt_runs_free(&scope->runs); /* a scope may serve several passes */
    bmt_runs_init(&scope->runs);
    int rc = open_pass(r, &p, scope, &rec), past_end = 0;
    /* Past this an event is further from the first than any real
     * recording (warned once, then never again). */
    uint64_t odd_ns = scope->first_ns + ODD_SPAN_NS < scope->first_ns
                          ? UINT64_MAX : scope->first_ns + ODD_SPAN_NS;
    if (rc == 1)
        pass->first_ns = rec->ts_ns; /* counted below unless past the window's end */
    for (; rc == 1; rc = bmt_reader_next(r, &rec)) {
        uint64_t ts = rec->ts_ns;
        if (ts > scope->window.end_ns) {
            past_end = 1; /* the trace goes on: open intervals close at the window's end */
            break;
        }
        pass->event_count++;
        pass->last_ns = ts;
        if (__builtin_expect(ts > odd_ns, 0)) {
            odd_ns = UINT64_MAX;
            warn_span(r, scope, ts);
        }
        if (rec->tp != BMT_TP_NONE && (rc = feed_event(&p, scope, rec)) < 0)
            break;
    }
    if (!pass->event_count)
        pass->first_ns = 0;
    if (rc == 0 || past_end)
        rc = end_pass(r, &p, scope, pass, past_end);
    if (rc == -ENOMEM)
        snprintf(r->error, sizeof r->error, "out of memory; free some memory");
    return rc;
}
