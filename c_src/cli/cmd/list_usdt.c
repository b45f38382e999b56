/* `beamtrace list --usdt`: OTP's DTrace/SystemTap probes and what beamtrace
 * provides for each (usdt.def), as text, JSON or the docs' markdown table. */
#include "list.h"
#include "base/out.h"
#include "out/json.h"
#include "core/usdt_catalogue.h"
#include "sinks/usdt_sdt.h"

#include <string.h>

/* Probe name as bpftrace and the ELF note spell it: '-' becomes "__". */
static void put_note_name(struct bmt_out *o, const char *name)
{
    for (; *name; name++) {
        if (*name == '-')
            bmt_out_str(o, "__");
        else
            bmt_out_char(o, *name);
    }
}

static void json_str(struct bmt_out *o, const char *s)
{
    bmt_json_cstr(o, s);
}

void bmt_list_usdt(struct bmt_out *o, enum bmt_list_format format)
{
    if (format == BMT_LIST_JSON) {
        bmt_out_str(o, "{\"provider\": \"erlang\", \"compiled_in\": ");
        bmt_out_str(o, BMT_USDT_COMPILED_IN ? "true" : "false");
        bmt_out_str(o, ", \"probes\": [");
        for (unsigned i = 0; i < bmt_usdt_count; i++) {
            const struct bmt_usdt_probe *p = &bmt_usdt_catalogue[i];
            bmt_out_str(o, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
            json_str(o, p->name);
            bmt_json_member(o, "status", bmt_usdt_status_name(p->status));
            bmt_json_member(o, "source", p->source);
            bmt_json_member(o, "arguments", p->arguments);
            bmt_json_member(o, "note", p->note);
            bmt_out_char(o, '}');
        }
        bmt_out_str(o, "\n]}\n");
        return;
    }
    if (format == BMT_LIST_MARKDOWN) {
        bmt_out_str(o, "| OTP probe | USDT name | status | from | arguments | note |\n"
                       "|---|---|---|---|---|---|\n");
        for (unsigned i = 0; i < bmt_usdt_count; i++) {
            const struct bmt_usdt_probe *p = &bmt_usdt_catalogue[i];
            bmt_out_str(o, "| `erlang:::");
            bmt_out_str(o, p->name);
            bmt_out_str(o, "` | ");
            if (p->status != BMT_USDT_NONE) {
                bmt_out_str(o, "`");
                put_note_name(o, p->name);
                bmt_out_str(o, "`");
            }
            bmt_out_str(o, " | ");
            bmt_out_str(o, bmt_usdt_status_name(p->status));
            bmt_out_str(o, " | ");
            bmt_out_str(o, p->source);
            bmt_out_str(o, " | `");
            bmt_out_str(o, p->arguments);
            bmt_out_str(o, "` | ");
            bmt_out_str(o, p->note);
            bmt_out_str(o, " |\n");
        }
        return;
    }
    bmt_out_str(o, "USDT provider erlang (probes in priv/beamtrace_nif.so; '-' is '__' in the ELF note)\n");
    if (!BMT_USDT_COMPILED_IN)
        bmt_out_str(o, "The USDT probes are compiled out of this build: sys/sdt.h was absent\n"
                       "(install systemtap-sdt-dev, then rebuild); none of the probes below fires.\n");
    for (unsigned i = 0; i < bmt_usdt_count; i++) {
        const struct bmt_usdt_probe *p = &bmt_usdt_catalogue[i];
        size_t len = strlen(p->name);
        bmt_out_str(o, p->name);
        while (len++ < 28)
            bmt_out_char(o, ' ');
        bmt_out_str(o, bmt_usdt_status_name(p->status));
        bmt_out_char(o, '\n');
        if (*p->source) {
            bmt_out_str(o, "    from: ");
            bmt_out_str(o, p->source);
            bmt_out_char(o, '\n');
        }
        bmt_out_str(o, "    args: ");
        bmt_out_str(o, p->arguments);
        bmt_out_char(o, '\n');
        if (*p->note) {
            bmt_out_str(o, "    note: ");
            bmt_out_str(o, p->note);
            bmt_out_char(o, '\n');
        }
    }
}
