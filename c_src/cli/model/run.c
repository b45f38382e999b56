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

int bmt_an_run(struct bmt_reader *r, const char *dir, struct bmt_an_scope *scope,
               int (*feed)(void *ctx, const struct bmt_record *rec), void *ctx,
               struct bmt_an_pass *pass)
{
    memset(pass, 0, sizeof *pass);
    scope->filtering = scope->pid_count + scope->pattern_count > 0;
    scope->windowed = scope->begin_text || scope->end_text;
    int rc = scope->filtering ? bmt_an_scope_filter(scope, r) : 0;
    if (rc < 0)
        return rc;
    if ((rc = bmt_reader_open(r, scope->paths, scope->path_count)) < 0)
        return rc;
    if (scope->on_packet) {
        r->on_packet = scope->on_packet;
        r->on_packet_ctx = ctx;
    }
    for (unsigned t = 0; t < r->trace_count; t++)
        if (r->traces[t].meta.warning)
            bmt_reader_warn(r, "%s: %s; analyses ignore its events", dir,
                            r->traces[t].meta.warning);
    const struct bmt_record *rec;
    rc = bmt_reader_next(r, &rec);
    if (rc < 0)
        return rc;
    scope->first_ns = rc == 1 ? rec->ts_ns : 0;
    int wrc = bmt_an_scope_window(scope, r);
    if (wrc < 0)
        return wrc;
    if (r->overwritten) {
        char t[32];
        bmt_clock_text(bmt_reader_wall_ns(r, r->complete_from_ns), t);
        bmt_reader_warn(r, "%s: a flight-recorder trace whose streams lost their oldest packets: "
                        "calls and intervals are counted from %s, where every stream has data",
                        dir, t);
    }
    int odd = 0, past_end = 0;
    for (; rc == 1; rc = bmt_reader_next(r, &rec)) {
        uint64_t ts = rec->ts_ns;
        if (ts > scope->window.end_ns) {
            past_end = 1; /* the trace goes on: open intervals close at the window's end */
            break;
        }
        if (pass->event_count++ == 0)
            pass->first_ns = ts;
        pass->last_ns = ts;
        if (!odd && ts - scope->first_ns > ODD_SPAN_NS) {
            char a[64], b[64], span[48];
            odd = 1;
            bmt_date_text(bmt_reader_wall_ns(r, scope->first_ns), a);
            bmt_date_text(bmt_reader_wall_ns(r, ts), b);
            span_text(ts - scope->first_ns, span);
            bmt_reader_warn(r, "%s: events %s apart (the first at %s, one at %s): a corrupt or "
                            "unusual trace; results may mean little", dir, span, a, b);
        }
        if (rec->tp == BMT_TP_NONE)
            continue;
        if ((rc = bmt_names_feed(&scope->names, rec)) < 0)
            break;
        if (ts >= scope->window.begin_ns) {
            switch (rec->tp) {
            case BMT_TP_process_scheduled: scope->sched_count++; break;
            case BMT_TP_message_receive: scope->receive_count++; break;
            case BMT_TP_gc_minor_start: case BMT_TP_gc_major_start: scope->gc_count++; break;
            case BMT_TP_function_call: scope->call_count++; break;
            default: break;
            }
        }
        if (!scope->keep_links && (rec->tp == BMT_TP_message_send_link ||
                                   rec->tp == BMT_TP_message_receive_link)) {
            /* Their first fields are OTP's, in OTP's order (catalogue.def). */
            struct bmt_record otp = *rec;
            otp.tp = rec->tp == BMT_TP_message_send_link ? BMT_TP_message_send
                                                         : BMT_TP_message_receive;
            if (otp.tp == BMT_TP_message_receive)
                scope->receive_count += ts >= scope->window.begin_ns;
            if ((rc = feed(ctx, &otp)) < 0)
                break;
            continue;
        }
        if ((rc = feed(ctx, rec)) < 0)
            break;
    }
    if (rc < 0) {
        if (rc == -ENOMEM)
            snprintf(r->error, sizeof r->error, "out of memory; free some memory");
        return rc;
    }
    pass->end_ns = past_end ? scope->window.end_ns : pass->last_ns;
    for (unsigned s = 0; s < r->stream_count; s++) {
        pass->discarded_count += r->streams[s].discarded_count;
        pass->lost_packet_count += r->streams[s].lost_packet_count;
    }
    if (pass->discarded_count)
        bmt_reader_warn(r, "%s: %llu events were discarded while recording; stacks and times "
                        "around the losses may be wrong", dir,
                        (unsigned long long)pass->discarded_count);
    return 0;
}
