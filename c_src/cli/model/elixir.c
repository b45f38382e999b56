/* Elixir display names (contract in elixir.h). */
#include "elixir.h"

#include <stdio.h>
#include <string.h>

static void copy(char *out, size_t cap, const char *s, size_t len)
{
    if (!cap)
        return;
    if (len >= cap)
        len = cap - 1;
    memcpy(out, s, len);
    out[len] = '\0';
}

/* An atom as OTP prints it: quoted ('...', with \' and \\ escapes) or bare.
 * Decodes it into `buf`; returns the bytes consumed from s, or 0 when s does
 * not start with an atom. */
static size_t atom(const char *s, size_t len, char *buf, size_t cap, size_t *out_len)
{
    size_t i = 0, n = 0;
    if (len && s[0] == '\'') {
        for (i = 1; i < len && s[i] != '\''; i++) {
            char c = s[i];
            if (c == '\\' && i + 1 < len)
                c = s[++i];
            if (n + 1 < cap)
                buf[n++] = c;
        }
        if (i >= len)
            return 0;
        i++;
    } else {
        while (i < len && s[i] != ':' && s[i] != '/') {
            if (n + 1 < cap)
                buf[n++] = s[i];
            i++;
        }
    }
    buf[n] = '\0';
    *out_len = n;
    return i;
}

static int is_identifier(const char *f)
{
    size_t n = strlen(f);
    if (!n || !((f[0] >= 'a' && f[0] <= 'z') || f[0] == '_'))
        return 0;
    for (size_t i = 0; i < n; i++) {
        char c = f[i];
        int ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                 c == '_' || ((c == '?' || c == '!') && i == n - 1);
        if (!ok)
            return 0;
    }
    return 1;
}

const char *bmt_elixir_mfa(const char *mfa, size_t len, char *out, size_t cap)
{
    char mod[512], fun[512];
    size_t mlen, flen;
    size_t used = atom(mfa, len, mod, sizeof mod, &mlen);
    if (!used || used >= len || mfa[used] != ':' || strncmp(mod, "Elixir.", 7) != 0) {
        copy(out, cap, mfa, len);
        return out;
    }
    size_t f_at = used + 1;
    size_t fused = atom(mfa + f_at, len - f_at, fun, sizeof fun, &flen);
    if (!fused || f_at + fused >= len || mfa[f_at + fused] != '/') {
        copy(out, cap, mfa, len);
        return out;
    }
    const char *arity = mfa + f_at + fused + 1;
    int arity_len = (int)(len - (f_at + fused + 1));
    const char *m = mod + 7;
    /* Anonymous functions: "-handle_call/3-fun-0-" */
    if (fun[0] == '-' && strstr(fun, "-fun-")) {
        const char *end = strstr(fun, "-fun-");
        snprintf(out, cap, "anonymous fn/%.*s in %s.%.*s", arity_len, arity, m,
                 (int)(end - fun - 1), fun + 1);
    } else if (is_identifier(fun)) {
        snprintf(out, cap, "%s.%s/%.*s", m, fun, arity_len, arity);
    } else {
        snprintf(out, cap, "%s.\"%s\"/%.*s", m, fun, arity_len, arity);
    }
    return out;
}

const char *bmt_elixir_atom(const char *text, size_t len, char *out, size_t cap)
{
    char a[512];
    size_t n;
    size_t used = atom(text, len, a, sizeof a, &n);
    if (used == len && text[0] == '\'' && strncmp(a, "Elixir.", 7) == 0) {
        copy(out, cap, a + 7, n - 7);
        return out;
    }
    copy(out, cap, text, len);
    return out;
}
