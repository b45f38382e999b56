/* `beamtrace list`: the tracepoint catalogue, for people (aligned text),
 * for programs (JSON) and for the docs (a markdown table, which `make docs`
 * puts in the README). Everything printed comes from catalogue.def. */
#include "list.h"
#include "options.h"
#include "core/catalogue.h"
#include "base/out.h"
#include "out/json.h"

#include <string.h>

static const char *type_name(enum bmt_field_type t)
{
    switch (t) {
    case BMT_FIELD_STRING: return "string";
    case BMT_FIELD_U32: return "u32";
    case BMT_FIELD_U64: return "u64";
    case BMT_FIELD_S64: return "s64";
    }
    return "?";
}

static const char *kind_name(enum bmt_field_kind k)
{
    switch (k) {
    case BMT_KIND_ID: return "id";
    case BMT_KIND_MFA: return "mfa";
    case BMT_KIND_TERM: return "term";
    case BMT_KIND_MSG: return "msg";
    case BMT_KIND_WORD: return "word";
    case BMT_KIND_USER: return "user";
    case BMT_KIND_INT: return "int";
    }
    return "?";
}

static void pad(struct bmt_out *o, size_t used, size_t width)
{
    while (used++ < width)
        bmt_out_char(o, ' ');
}

static void print_text(struct bmt_out *o)
{
    size_t name_w = strlen("TRACEPOINT"), flag_w = strlen("FLAG");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        size_t n = strlen(bmt_catalogue[i].full_name), f = strlen(bmt_catalogue[i].flag);
        name_w = n > name_w ? n : name_w;
        flag_w = f > flag_w ? f : flag_w;
    }
    bmt_out_str(o, "TRACEPOINT");
    pad(o, strlen("TRACEPOINT"), name_w + 2);
    bmt_out_str(o, "FLAG");
    pad(o, strlen("FLAG"), flag_w + 2);
    bmt_out_str(o, "FIELDS\n");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *t = &bmt_catalogue[i];
        bmt_out_str(o, t->full_name);
        pad(o, strlen(t->full_name), name_w + 2);
        bmt_out_str(o, t->flag);
        pad(o, strlen(t->flag), flag_w + 2);
        for (unsigned f = 0; f < t->field_count; f++) {
            if (f)
                bmt_out_char(o, ' ');
            bmt_out_str(o, t->fields[f].name);
            bmt_out_char(o, ':');
            bmt_out_str(o, type_name(t->fields[f].type));
        }
        bmt_out_char(o, '\n');
        pad(o, 0, 4);
        bmt_out_str(o, t->summary);
        bmt_out_char(o, '\n');
    }
}

static void json_str(struct bmt_out *o, const char *s)
{
    bmt_json_cstr(o, s);
}

static void print_json(struct bmt_out *o)
{
    bmt_out_str(o, "{\"tracepoints\": [");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *t = &bmt_catalogue[i];
        bmt_out_str(o, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
        json_str(o, t->full_name);
        bmt_json_member(o, "domain", t->domain);
        bmt_json_member(o, "event", t->name);
        bmt_out_str(o, ", \"id\": ");
        bmt_out_u64(o, (uint64_t)i);
        bmt_json_member(o, "flag", t->flag);
        bmt_json_member(o, "summary", t->summary);
        bmt_out_str(o, ", \"fields\": [");
        for (unsigned f = 0; f < t->field_count; f++) {
            const struct bmt_field *fd = &t->fields[f];
            bmt_out_str(o, f ? ", {\"name\": " : "{\"name\": ");
            json_str(o, fd->name);
            bmt_json_member(o, "type", type_name(fd->type));
            bmt_json_member(o, "kind", kind_name(fd->kind));
            bmt_json_member(o, "doc", fd->doc);
            bmt_out_char(o, '}');
        }
        bmt_out_str(o, "]}");
    }
    bmt_out_str(o, "\n]}\n");
}

/* The README's tracepoint table. */
static void print_markdown(struct bmt_out *o)
{
    bmt_out_str(o, "| tracepoint | `erlang:trace/3` flag | fields | what |\n|---|---|---|---|\n");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *t = &bmt_catalogue[i];
        bmt_out_str(o, "| `");
        bmt_out_str(o, t->full_name);
        bmt_out_str(o, "` | `");
        bmt_out_str(o, t->flag);
        bmt_out_str(o, "` | ");
        for (unsigned f = 0; f < t->field_count; f++) {
            bmt_out_str(o, f ? ", `" : "`");
            bmt_out_str(o, t->fields[f].name);
            bmt_out_char(o, ':');
            bmt_out_str(o, type_name(t->fields[f].type));
            bmt_out_char(o, '`');
        }
        bmt_out_str(o, " | ");
        bmt_out_str(o, t->summary);
        bmt_out_str(o, " |\n");
    }
}

struct list_opts {
    struct bmt_common common;
    int usdt;
};

static const char *const format_values[] = {"text", "json", "markdown", NULL};

static const struct bmt_opt options[] = {
    {.name = "usdt", .type = BMT_OPT_FLAG,
     .help = "OTP's DTrace/SystemTap probes instead: which beamtrace provides as USDT probes, "
             "approximates, or cannot derive",
     .offset = BMT_OPT_AT(struct list_opts, usdt, int)},
    {.name = "format", .type = BMT_OPT_ENUM,
     .help = "text (aligned), json, or markdown (the docs table)", .def = "text",
     .values = format_values, .offset = BMT_OPT_AT(struct list_opts, common.format, int)},
    {0},
};

static int run(void *opts_)
{
    const struct list_opts *op = opts_;
    enum bmt_list_format format = (enum bmt_list_format)op->common.format;
    struct bmt_out o;
    if (bmt_out_open(&o, 1, 1 << 16) < 0) {
        bmt_cli_error("list: out of memory; free some memory");
        return BMT_EXIT_FAIL;
    }
    if (op->usdt)
        bmt_list_usdt(&o, format);
    else if (format == BMT_LIST_MARKDOWN)
        print_markdown(&o);
    else if (format == BMT_LIST_JSON)
        print_json(&o);
    else
        print_text(&o);
    if (bmt_out_close(&o) < 0) {
        bmt_cli_error("list: cannot write the output; check the disk or pipe");
        return BMT_EXIT_FAIL;
    }
    return BMT_EXIT_OK;
}

const struct bmt_command bmt_cmd_list = {
    .name = "list",
    .summary = "list the tracepoints beamtrace knows",
    .description =
        "Prints every tracepoint in the catalogue: domain:name, the erlang:trace/3\n"
        "flag that produces it, its fields (name:type, in order) and what it means.",
    .opts = options,
    .size = sizeof(struct list_opts),
    .run = run,
};
