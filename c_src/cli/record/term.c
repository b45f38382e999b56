/* The options as the Erlang term the controller reads (contract in
 * record.h). */
#include "record.h"
#include "flight_opts.h"
#include "base/diag.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD "record"

/* ---- a growable text buffer for the options term ---- */

static void text_add(struct bmt_text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *b = realloc(t->buf, cap);
        if (!b) {
            t->failed = 1;
            return;
        }
        t->buf = b;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

static void text_str(struct bmt_text *t, const char *s)
{
    text_add(t, s, strlen(s));
}

/* An Erlang binary <<"...">> holding `s`'s bytes (UTF-8 stays UTF-8: the
 * escapes \x{..} are bytes in a plain binary; with /utf8 they would be
 * encoded again). */
static void text_binary(struct bmt_text *t, const char *s)
{
    text_str(t, "<<\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char esc[8];
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\', esc[1] = (char)*p, esc[2] = '\0';
            text_str(t, esc);
        } else if (*p < 0x20 || *p >= 0x7f) {
            snprintf(esc, sizeof esc, "\\x{%x}", *p);
            text_str(t, esc);
        } else {
            text_add(t, (const char *)p, 1);
        }
    }
    text_str(t, "\">>");
}

static void text_int(struct bmt_text *t, int64_t v)
{
    char b[32];
    snprintf(b, sizeof b, "%lld", (long long)v);
    text_str(t, b);
}

/* A comma-separated list as an Erlang list of binaries, or of atoms. */
static void text_list(struct bmt_text *t, const char *list, int atoms)
{
    char *copy = strdup(list), *save = NULL;
    int first = 1;
    if (!copy)
        t->failed = 1;
    text_str(t, "[");
    for (char *n = copy ? strtok_r(copy, ",", &save) : NULL; n; n = strtok_r(NULL, ",", &save)) {
        text_str(t, first ? "" : ", ");
        if (atoms) {
            text_str(t, "'");
            text_str(t, n);
            text_str(t, "'");
        } else {
            text_binary(t, n);
        }
        first = 0;
    }
    text_str(t, "]");
    free(copy);
}

/* ", key => " */
static void term_key(struct bmt_text *t, const char *key)
{
    text_str(t, ", ");
    text_str(t, key);
    text_str(t, " => ");
}

/* ", key => VALUE" for option `o` of `a`, by its type; nothing for a value
 * not given (the controller's default then). */
static void term_option(struct bmt_text *t, const struct bmt_opt *o,
                        const struct bmt_record_args *a)
{
    const void *f = (const char *)a + o->offset;
    if (o->flags & BMT_OPT_REPEAT) {
        const struct bmt_strs *l = f;
        term_key(t, o->term);
        text_str(t, "[");
        for (unsigned i = 0; i < l->n; i++) {
            text_str(t, i ? ", " : "");
            text_binary(t, l->v[i]);
        }
        text_str(t, "]");
        return;
    }
    switch (o->type) {
    case BMT_OPT_FLAG:
        term_key(t, o->term);
        text_str(t, *(const int *)f ? "true" : "false");
        return;
    case BMT_OPT_DURATION: {
        uint64_t ns = *(const uint64_t *)f;
        term_key(t, o->term);
        if (ns == UINT64_MAX)
            text_str(t, "infinity");
        else
            text_int(t, (int64_t)(ns / 1000000)); /* the controller's unit: ms */
        return;
    }
    case BMT_OPT_COUNT:
    case BMT_OPT_SIZE:
        if (*(const uint64_t *)f) { /* 0: not given */
            term_key(t, o->term);
            if (*(const uint64_t *)f == UINT64_MAX) /* "infinity" (BMT_OPT_INFINITY) */
                text_str(t, "infinity");
            else
                text_int(t, (int64_t) * (const uint64_t *)f);
        }
        return;
    case BMT_OPT_ENUM: {
        /* The default is the controller's too (a --flight recording's
         * overwrite mode stays its own): only another value is written. */
        const char *v = o->values[*(const int *)f];
        if (o->def && strcmp(v, o->def) == 0)
            return;
        term_key(t, o->term);
        text_str(t, v); /* one of values[]: an atom */
        return;
    }
    default: {
        const char *s = *(const char *const *)f;
        if (!s)
            return;
        term_key(t, o->term);
        if (o->flags & BMT_OPT_AS_TERM)
            text_str(t, s); /* checked: an integer or an atom */
        else if (o->type == BMT_OPT_LIST)
            text_list(t, s, o->values != NULL);
        else
            text_binary(t, s);
        return;
    }
    }
}

/* --procs: all, new or existing as atoms, else a list of names and pids. */
static void term_procs(struct bmt_text *t, const char *p)
{
    text_str(t, ", procs => ");
    if (strcmp(p, "all") == 0 || strcmp(p, "new") == 0 || strcmp(p, "existing") == 0)
        text_str(t, p);
    else
        text_list(t, p, 0);
}

/* ", key => MS" for a duration given (0: not given, the controller's
 * default then). */
static void term_ms(struct bmt_text *t, const char *key, uint64_t ns)
{
    if (!ns)
        return;
    term_key(t, key);
    text_int(t, (int64_t)(ns / 1000000));
}

/* One --sample ratio: a bare N for "1/N", else "kind => N". */
struct sample_term {
    struct bmt_text *t;
    int items;
};

static void sample_item(void *ctx, const char *kind, unsigned long long n)
{
    struct sample_term *st = ctx;
    if (kind) {
        text_str(st->t, st->items++ ? ", " : "#{");
        /* receive is a reserved word: quoted, as every kind is. */
        text_str(st->t, "'");
        text_str(st->t, kind);
        text_str(st->t, "' => ");
    }
    text_int(st->t, (int64_t)n);
}

/* --sample, --on-max-rate; with --flight the `flight` map (window, after,
 * triggers, max_captures, until) and detach. */
static void term_flight(struct bmt_text *t, const struct bmt_record_args *a)
{
    if (a->sample) {
        struct sample_term st = {t, 0};
        term_key(t, "sample");
        bmt_record_sample_each(a->sample, sample_item, &st); /* checked when parsed */
        if (st.items)
            text_str(t, "}");
    }
    if (a->on_max_rate) {
        term_key(t, "on_max_rate");
        text_str(t, a->on_max_rate); /* stop or sample, checked: an atom */
    }
    if (!a->flight_ns)
        return;
    text_str(t, ", flight => #{window => ");
    text_int(t, (int64_t)(a->flight_ns / 1000000));
    term_ms(t, "'after'", a->after_ns);
    term_ms(t, "until", a->until_ns);
    if (a->max_captures) {
        term_key(t, "max_captures");
        if (strcmp(a->max_captures, "infinity") == 0)
            text_str(t, "infinity");
        else
            text_int(t, strtoll(a->max_captures, NULL, 10)); /* N/h, checked */
    }
    text_str(t, ", triggers => [");
    for (unsigned i = 0; i < a->triggers.n; i++) {
        text_str(t, i ? ", " : "");
        text_binary(t, a->triggers.v[i]);
    }
    text_str(t, "]}");
    if (a->detach)
        text_str(t, ", detach => true");
}

int bmt_record_action_term(struct bmt_text *t, const struct bmt_record_args *a,
                           enum bmt_record_action action, const char *out,
                           const char *cookie_from, int tty)
{
    static const char *const names[] = {"flights", "fetch", "stop", "snapshot"};
    text_str(t, tty ? "#{tty => true" : "#{tty => false");
    text_str(t, ", action => ");
    text_str(t, names[action]);
    text_str(t, ", node => ");
    text_binary(t, a->node);
    if (out[0]) {
        text_str(t, ", out => ");
        text_binary(t, out);
    }
    if (a->remote_tmp) {
        text_str(t, ", remote_tmp => ");
        text_binary(t, a->remote_tmp);
    }
    text_str(t, ", cookie_from => ");
    text_binary(t, cookie_from);
    text_str(t, "}.\n");
    return 0;
}

int bmt_record_term(struct bmt_text *t, const struct bmt_record_args *a, const char *root,
                    const char *out, const char *cookie_from, int tty)
{
    char nif[PATH_MAX + 32], sources[8192], err[512];
    snprintf(nif, sizeof nif, "%s/priv/beamtrace_nif.so", root);
    text_str(t, tty ? "#{tty => true" : "#{tty => false");
    for (const struct bmt_opt *o = bmt_record_options; o->name; o++)
        if (o->term)
            term_option(t, o, a);
    term_procs(t, a->procs);
    term_flight(t, a);
    text_str(t, ", out => ");
    text_binary(t, out);
    text_str(t, ", remote_dir => ");
    if (a->remote_dir && a->remote_dir[0])
        text_binary(t, a->remote_dir);
    else
        text_str(t, a->remote_dir ? "true" : "false");
    if (bmt_record_sources_term(&a->sources, sources, sizeof sources, err, sizeof err) != 0)
        return bmt_cli_usage_error(CMD, "%s", err); /* checked when parsed */
    text_str(t, sources);
    text_str(t, ", nif => ");
    text_binary(t, nif);
    text_str(t, ", cookie_from => ");
    text_binary(t, cookie_from);
    text_str(t, "}.\n");
    return 0;
}
