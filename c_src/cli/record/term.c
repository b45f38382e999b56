/* The options as the Erlang term the controller reads (contract in
 * record.h). */
#include "record.h"
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

static const char *const KINDS[] = {"procs", "send", "receive", "running",
                                    "garbage_collection", "ports", "call"};

int bmt_record_kinds(struct bmt_text *t, const char *list, char **bad)
{
    char *copy = strdup(list), *save = NULL;
    if (!copy)
        return -1;
    int first = 1, rc = 0;
    for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
        size_t i;
        for (i = 0; i < sizeof KINDS / sizeof KINDS[0]; i++)
            if (strcmp(k, KINDS[i]) == 0)
                break;
        if (i == sizeof KINDS / sizeof KINDS[0]) {
            *bad = strdup(k);
            rc = -1;
            break;
        }
        text_str(t, first ? "'" : ", '");
        text_str(t, KINDS[i]);
        text_str(t, "'");
        first = 0;
    }
    free(copy);
    return rc;
}

int bmt_record_term(struct bmt_text *t, const struct bmt_record_opts *o, const char *root,
                      const char *out, const char *cookie_from, int tty)
{
    char nif[PATH_MAX + 32];
    snprintf(nif, sizeof nif, "%s/priv/beamtrace_nif.so", root);
    text_str(t, "#{node => ");
    text_binary(t, o->node);
    if (o->nodes) {
        char *copy = strdup(o->nodes), *save = NULL;
        int first = 1;
        if (!copy)
            t->failed = 1;
        text_str(t, ", nodes => [");
        for (char *n = copy ? strtok_r(copy, ",", &save) : NULL; n; n = strtok_r(NULL, ",", &save)) {
            text_str(t, first ? "" : ", ");
            text_binary(t, n);
            first = 0;
        }
        text_str(t, "]");
        free(copy);
    }
    if (o->cluster)
        text_str(t, ", cluster => true");
    if (o->links)
        text_str(t, ", links => true");
    text_str(t, ", calls => [");
    for (int i = 0; i < o->call_count; i++) {
        text_str(t, i ? ", " : "");
        text_binary(t, o->calls[i]);
    }
    text_str(t, "], events => [");
    if (o->events) {
        char *bad = NULL;
        if (bmt_record_kinds(t, o->events, &bad) != 0) { /* checked when parsed */
            free(bad);
            t->failed = 1;
        }
    }
    text_str(t, "], procs => ");
    const char *p = o->procs ? o->procs : "all";
    if (strcmp(p, "all") == 0 || strcmp(p, "new") == 0 || strcmp(p, "existing") == 0) {
        text_str(t, p);
    } else {
        char *copy = strdup(p), *save = NULL;
        int first = 1;
        text_str(t, "[");
        for (char *name = strtok_r(copy, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
            text_str(t, first ? "" : ", ");
            text_binary(t, name);
            first = 0;
        }
        text_str(t, "]");
        free(copy);
    }
    text_str(t, ", duration => ");
    if (o->duration_ms < 0)
        text_str(t, "infinity");
    else
        text_int(t, o->duration_ms);
    if (o->max_events) {
        text_str(t, ", max_events => ");
        text_int(t, o->max_events);
    }
    if (o->max_bytes) {
        text_str(t, ", max_bytes => ");
        text_int(t, o->max_bytes);
    }
    if (o->max_rate) {
        text_str(t, ", max_rate => ");
        text_int(t, o->max_rate);
    }
    text_str(t, ", out => ");
    text_binary(t, out);
    text_str(t, ", remote_dir => ");
    if (o->remote_dir_path)
        text_binary(t, o->remote_dir_path);
    else
        text_str(t, o->remote_dir ? "true" : "false");
    if (o->remote_tmp) {
        text_str(t, ", remote_tmp => ");
        text_binary(t, o->remote_tmp);
    }
    char sources[8192], err[512];
    if (bmt_record_sources_term(&o->sources, sources, sizeof sources, err, sizeof err) != 0)
        return bmt_cli_usage_error(CMD, "%s", err); /* checked when parsed */
    text_str(t, sources);
    text_str(t, o->keep ? ", keep => true" : ", keep => false");
    text_str(t, o->return_to ? ", return_to => true" : ", return_to => false");
    text_str(t, tty ? ", tty => true" : ", tty => false");
    text_str(t, ", nif => ");
    text_binary(t, nif);
    text_str(t, ", cookie_from => ");
    text_binary(t, cookie_from);
    text_str(t, "}.\n");
    return 0;
}
