/* Generates, from the catalogue and the tracer callback table, what C's
 * preprocessor cannot derive readably:
 *   <c_dir>/catalogue_fields.h  named field positions, BMT_F_<tracepoint>_<field>
 *   <hrl_dir>/beamtrace_tracer.hrl  the erl_tracer callbacks' exports, -nifs
 *                                   and stubs, for every tracer module in Erlang
 * Usage: gen_catalogue C_DIR HRL_DIR. The outputs are committed with a
 * DO-NOT-EDIT banner; `make` regenerates them into _build/ and fails when
 * the committed ones differ (Makefile: check-generated).
 */
#define BMT_GENERATING_CATALOGUE
#include "core/catalogue.h"

#include <stdio.h>
#include <string.h>

static const struct {
    const char *name;
    int arity;
} callbacks[] = {
#define X(name, arity) {#name, arity},
#include "nif/tracer_callbacks.def"
#undef X
};
#define CALLBACK_COUNT (sizeof callbacks / sizeof callbacks[0])

static FILE *open_out(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (!f)
        perror(path);
    return f;
}

static int write_fields(const char *dir)
{
    FILE *f = open_out(dir, "catalogue_fields.h");
    if (!f)
        return 1;
    fprintf(f, "/* DO NOT EDIT: generated from catalogue.def by tools/gen_catalogue.c\n"
               " * (make generate). Field positions by name: BMT_F_<tracepoint>_<field> is\n"
               " * the index of that field in struct bmt_event.values and in the CTF\n"
               " * payload. */\n"
               "#ifndef BMT_CATALOGUE_FIELDS_H\n#define BMT_CATALOGUE_FIELDS_H\n\n"
               "enum bmt_field_index {\n");
    for (int i = 0; i < BMT_TP_COUNT; i++) {
        const struct bmt_tracepoint *tp = &bmt_catalogue[i];
        for (unsigned k = 0; k < tp->field_count; k++)
            fprintf(f, "    BMT_F_%s_%s = %u,\n", tp->name, tp->fields[k].name, k);
    }
    fprintf(f, "};\n\n#endif\n");
    return fclose(f) != 0;
}

/* Two callbacks (enabled_X, trace_X) per line, as a list. */
static void list_callbacks(FILE *f)
{
    for (size_t i = 0; i < CALLBACK_COUNT; i++)
        fprintf(f, "%s%s/%d%s", i % 2 ? " " : i == 0 ? "        [" : "         ",
                callbacks[i].name, callbacks[i].arity,
                i + 1 == CALLBACK_COUNT ? "]).\n" : i % 2 ? ",\n" : ",");
}

static int write_hrl(const char *dir)
{
    FILE *f = open_out(dir, "beamtrace_tracer.hrl");
    if (!f)
        return 1;
    fprintf(f, "%%%% DO NOT EDIT: generated from c_src/nif/tracer_callbacks.def by\n"
               "%%%% tools/gen_catalogue.c (make generate).\n"
               "%%%% The erl_tracer callbacks a tracer module exports as NIFs: beamtrace,\n"
               "%%%% its dyntrace compatibility module and the benchmark's null tracer all\n"
               "%%%% implement exactly these (the VM looks them up by name and arity).\n"
               "%%%% Include this after the module's attributes: it also defines the\n"
               "%%%% callbacks' stubs, which the NIF library replaces when it loads.\n"
               "-define(BEAMTRACE_TRACER_CALLBACKS,\n");
    list_callbacks(f);
    fprintf(f, "\n-export(?BEAMTRACE_TRACER_CALLBACKS).\n-nifs(?BEAMTRACE_TRACER_CALLBACKS).\n\n");
    for (size_t i = 0; i < CALLBACK_COUNT; i++) {
        fprintf(f, "%s(", callbacks[i].name);
        for (int a = 0; a < callbacks[i].arity; a++)
            fprintf(f, "%s_", a ? ", " : "");
        fprintf(f, ") -> erlang:nif_error(nif_not_loaded).\n");
    }
    return fclose(f) != 0;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: gen_catalogue C_DIR HRL_DIR\n");
        return 2;
    }
    return write_fields(argv[1]) | write_hrl(argv[2]);
}
