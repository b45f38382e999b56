/*
 * Fast "%T" term text; see nif_term_text.h for the contract.
 *
 * The rules below restate what OTP 25's erts printer (erl_printf_term.c)
 * does; every one is checked byte for byte against enif_snprintf by
 * test/erl/bmt_term_text_SUITE.erl (make test-erl T=bmt_term_text_SUITE):
 *   - atoms: unquoted iff the first character is a Latin-1 lowercase letter
 *     and the rest are Latin-1 alphanumerics or '_' (judged on the UTF-8
 *     bytes: continuation bytes count as letters, 3- and 4-byte sequences
 *     force quotes); inside, \' \\ \n \f \t \r \b \v, other C0 controls and
 *     U+0080..U+009F as a backslash and 3 octal digits, the rest verbatim;
 *   - lists: a proper non-empty list of integers 0..255 with no control
 *     characters (C0, DEL, 128..159) other than \n \t \r and space is a
 *     string: '"' + raw bytes (Latin-1, not UTF-8) with only '"' and \n
 *     escaped; otherwise [a,b|c];
 *   - binaries: non-empty and all bytes in 32..126 -> <<"...">> with only
 *     '"' escaped; otherwise <<1,2,3>>;
 *   - integers in decimal, floats as C "%.6e", tuples {a,b}, flat maps
 *     #{k=>v} in their internal (sorted) order.
 * Output is written through a cursor that clamps at size-1 bytes; once full,
 * traversal stops, because the VM's later output could only be cut off.
 */
#include "nif_term_text.h"
#include "nif_atom_text.h"
#include "nif_binary_text.h"
#include "nif_term_out.h"
#include "nif_term_peek.h"

#include <stdio.h>
#include <string.h>

/* A map with at most this many keys is a flatmap in OTP 25 and prints as
 * #{...}; larger ones are HAMTs printed with their internal node layout,
 * which only the VM knows, so they fall back. */
#define FLATMAP_MAX_KEYS 32


struct ctx {
    ErlNifEnv *env;
    struct bmt_text_cache *cache;  /* may be NULL */
    long *scan_budget;             /* list cells and binary bytes left to scan */
};

/* Hands `t` to the VM's printer at the cursor. The VM writes at most
 * room bytes plus a NUL, which lands on o->end at worst: inside buf. Its
 * return value is the bytes written (not the untruncated length). */
static void put_fallback(struct bmt_text_out *o, ERL_NIF_TERM t)
{
    size_t room = (size_t)(o->end - o->p);
    int n;

    if (room == 0)
        return;
    n = enif_snprintf(o->p, room + 1, "%T", t);
    if (n < 0) {
        /* Cannot happen for a valid term; keep whatever was written. */
        o->p += strnlen(o->p, room);
        return;
    }
    o->p += (size_t)n < room ? (size_t)n : room;
}

static void put_i64(struct bmt_text_out *o, int64_t v)
{
    char tmp[24];
    char *s;

    if (v < 0) {
        s = bmt_u64_digits(0 - (uint64_t)v, tmp + sizeof tmp);
        *--s = '-';
    } else {
        s = bmt_u64_digits((uint64_t)v, tmp + sizeof tmp);
    }
    bmt_out_s(o, s, (size_t)(tmp + sizeof tmp - s));
}

/* ---- atoms ---------------------------------------------------------- */

#define slot_of bmt_term_slot
#define ATOM_CACHE_BITS BMT_ATOM_CACHE_BITS
#define ID_CACHE_BITS BMT_ID_CACHE_BITS
_Static_assert((1u << ATOM_CACHE_BITS) == BMT_ATOM_CACHE_ENTRIES,
               "atom cache bits");
_Static_assert((1u << ID_CACHE_BITS) == BMT_ID_CACHE_ENTRIES,
               "id cache bits");
_Static_assert(BMT_ATOM_CACHE_TEXT_BYTES <= 255 && BMT_ID_CACHE_TEXT_BYTES <= 255,
               "len_bytes is a uint8_t");

/* noinline: its 1.3 KiB of buffers must not land in put_term's recursive
 * frame. */
__attribute__((noinline))
static void put_atom(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t)
{
    struct bmt_atom_cache_entry *e = NULL;
    unsigned char name[BMT_ATOM_NAME_MAX_BYTES + 1];
    char text[BMT_ATOM_TEXT_MAX_BYTES + 2];  /* +2: see the fallback below */
    int got;
    size_t len;

    if (c->cache) {
        e = &c->cache->atoms.slot[slot_of(t, ATOM_CACHE_BITS)];
        if (e->key == t) {
            bmt_out_s(o, e->text, e->len_bytes);
            return;
        }
    }
    got = enif_get_atom(c->env, t, (char *)name, sizeof name, ERL_NIF_LATIN1);
    if (got > 0) {
        len = bmt_atom_render(name, (size_t)got - 1, text);
    } else {
        /* Characters above 255: the VM's text, cached if it is short.
         * enif_snprintf returns the bytes it wrote, not the length it
         * wanted, so a full buffer means "maybe cut": print directly. */
        int n = enif_snprintf(text, sizeof text, "%T", t);
        if (n < 0 || (size_t)n >= sizeof text - 1) {
            put_fallback(o, t);
            return;
        }
        len = (size_t)n;
    }
    if (e && len <= BMT_ATOM_CACHE_TEXT_BYTES) {
        memcpy(e->text, text, len);
        e->len_bytes = (uint8_t)len;
        e->key = t;
    }
    bmt_out_s(o, text, len);
}

/* ---- small integers --------------------------------------------------- */

int bmt_small_int_checked(ErlNifEnv *env, ERL_NIF_TERM t, int64_t *v)
{
    ErlNifSInt64 vm;
    if ((t & 0xF) == 0xF && bmt_peek_checking(BMT_PEEK_SMALL)) {
        int64_t mine = (int64_t)t >> 4;
        int agree = enif_get_int64(env, t, &vm) && vm == mine;
        bmt_peek_count(BMT_PEEK_SMALL, agree);
        if (agree) {
            *v = mine;
            return 1;
        }
    }
    /* Off (or a word that is no small integer): ask the VM. */
    if ((t & 0xF) == 0xF && enif_get_int64(env, t, &vm)) {
        *v = vm;
        return 1;
    }
    return 0;
}

/* ---- pids and ports ------------------------------------------------- */

/* Primary tag 3 marks an immediate in every OTP since R7; local pids and
 * ports are immediates, remote ones are boxed (heap pointers). */
static inline int is_immediate(ERL_NIF_TERM t)
{
    return (t & 3) == 3;
}

/* Local pids without the VM's printer. In OTP 24..26 on 64-bit a local pid
 * is the immediate (data << 4 | 0x3), and the low 28 bits of data hold the
 * pid number (15 bits) and serial (13 bits) that "%T" prints as <0.N.S>; the
 * bits above are the VM's own process-table scrambling. That layout is not
 * public API, so the first LAYOUT_CHECKS pids are also printed by
 * enif_snprintf and compared: one difference disables the shortcut for the
 * rest of the VM's life. The state is a property of the running VM binary,
 * shared by every thread, hence one process-wide atomic. */
#define LAYOUT_CHECKS 256
/* Checks passed so far, or -1: disabled. A plain int accessed only through
 * the __atomic builtins: clang rejects those on an _Atomic object. */
static int pid_layout_state;

/* Writes "<0.N.S>" for a local pid into `out` (>= 24 bytes); returns the
 * length, or -1 when the shortcut does not apply. */
static int local_pid_text(ERL_NIF_TERM t, char *out)
{
    int state = __atomic_load_n(&pid_layout_state, __ATOMIC_RELAXED);
    if (state < 0 || (t & 0xf) != 0x3 || sizeof(ERL_NIF_TERM) != 8)
        return -1;
    uint64_t data = (uint64_t)t >> 4;
    char *p = out;
    *p++ = '<';
    *p++ = '0';
    *p++ = '.';
    p = bmt_u64_text_at(p, data & 0x7fff);
    *p++ = '.';
    p = bmt_u64_text_at(p, (data >> 15) & 0x1fff);
    *p++ = '>';
    int len = (int)(p - out);
    if (state < LAYOUT_CHECKS) {
        char ref[40];
        int n = enif_snprintf(ref, sizeof ref, "%T", t);
        if (n != len || memcmp(ref, out, (size_t)len) != 0) {
            __atomic_store_n(&pid_layout_state, -1, __ATOMIC_RELAXED);
            return -1;
        }
        __atomic_fetch_add(&pid_layout_state, 1, __ATOMIC_RELAXED);
    }
    return len;
}

static void put_pid_or_port(struct bmt_id_cache *ids, struct bmt_text_out *o, ERL_NIF_TERM t)
{
    struct bmt_id_cache_entry *e;
    char tmp[BMT_ID_CACHE_TEXT_BYTES + 2];
    int n;

    if (!ids || !is_immediate(t)) {
        put_fallback(o, t);
        return;
    }
    e = &ids->slot[slot_of(t, ID_CACHE_BITS)];
    if (e->key == t) {
        bmt_out_s(o, e->text, e->len_bytes);
        return;
    }
    /* A miss (every new process's first event): a local pid is printed
     * from its word straight into its entry, emptied first (the entries
     * are NUL-padded), and copied out as a fixed-size block; the key is
     * cleared meanwhile, so a failed print leaves no stale key on new
     * text. */
    e->key = 0;
    memset(e->text, 0, sizeof e->text);
    n = local_pid_text(t, e->text);
    if (n > 0) {
        e->len_bytes = (uint8_t)n;
        e->key = t;
        if ((size_t)(o->end - o->p) >= sizeof e->text) {
            memcpy(o->p, e->text, sizeof e->text);
            o->p += n;
        } else {
            bmt_out_s(o, e->text, (size_t)n);
        }
        return;
    }
    /* Anything else by the VM. A full tmp may be a cut text (see
     * put_atom), and an entry keeps its NUL (hits copy the whole entry and
     * the field ends there): either is not cached. */
    n = enif_snprintf(tmp, sizeof tmp, "%T", t);
    if (n < 0 || (size_t)n >= sizeof e->text) {
        put_fallback(o, t);
        return;
    }
    memset(e->text, 0, sizeof e->text);
    memcpy(e->text, tmp, (size_t)n);
    e->len_bytes = (uint8_t)n;
    e->key = t;
    bmt_out_s(o, tmp, (size_t)n);
}

/* ---- lists ---------------------------------------------------------- */

static inline int string_char_ok(int c)
{
    if (c >= 32 && c < 127)
        return 1;
    if (c >= 160 && c <= 255)
        return 1;
    return c == ' ' || c == '\n' || c == '\t' || c == '\r';
}

/* 1 if `t` (a non-empty list) prints as "...": proper, all elements
 * small integers 0..255 that are not control characters except space
 * (within the scan budget: see BMT_TEXT_SCAN_BUDGET). */
static int list_is_string(ErlNifEnv *env, ERL_NIF_TERM t, long *budget)
{
    ERL_NIF_TERM hd;
    int c;

    while (enif_get_list_cell(env, t, &hd, &t)) {
        if (!enif_get_int(env, hd, &c) || c < 0 || c > 255
            || !string_char_ok(c))
            return 0;
        if (--*budget <= 0)
            return 1;
    }
    return enif_is_empty_list(env, t);
}

static void put_string(ErlNifEnv *env, struct bmt_text_out *o, ERL_NIF_TERM t)
{
    ERL_NIF_TERM hd;
    int c;

    bmt_out_c(o, '"');
    while (!bmt_out_full(o) && enif_get_list_cell(env, t, &hd, &t)) {
        enif_get_int(env, hd, &c);
        if (c == '\n') {
            bmt_out_c(o, '\\');
            bmt_out_c(o, 'n');
        } else {
            if (c == '"')
                bmt_out_c(o, '\\');
            bmt_out_c(o, (char)c);
        }
    }
    bmt_out_c(o, '"');
}

static void put_subterm(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t,
                     unsigned depth);

static void put_list(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t,
                     unsigned depth)
{
    ERL_NIF_TERM hd;
    int first = 1;

    if (list_is_string(c->env, t, c->scan_budget)) {
        put_string(c->env, o, t);
        return;
    }
    bmt_out_c(o, '[');
    while (!bmt_out_full(o) && enif_get_list_cell(c->env, t, &hd, &t)) {
        if (!first)
            bmt_out_c(o, ',');
        first = 0;
        put_subterm(c, o, hd, depth + 1);
    }
    if (bmt_out_full(o))
        return;
    if (!enif_is_empty_list(c->env, t)) {
        bmt_out_c(o, '|');
        put_subterm(c, o, t, depth + 1);
    }
    bmt_out_c(o, ']');
}

/* ---- the dispatcher ------------------------------------------------- */

/* Each put_<type> below writes t and returns 1, or returns 0 having
 * written nothing: the dispatcher then hands t to the VM's printer. */

static int put_integer(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t)
{
    ErlNifSInt64 v;
    ErlNifUInt64 u;
    char tmp[24];
    char *d;
    int64_t small;
    if (bmt_small_int(c->env, t, &small)) {
        put_i64(o, small);
        return 1;
    }
    if (enif_get_int64(c->env, t, &v)) {
        put_i64(o, v);
        return 1;
    }
    if (enif_get_uint64(c->env, t, &u)) {
        d = bmt_u64_digits(u, tmp + sizeof tmp);
        bmt_out_s(o, d, (size_t)(tmp + sizeof tmp - d));
        return 1;
    }
    return 0;
}

static int put_float(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t)
{
    double d;
    char tmp[40];
    int n;
    if (!enif_get_double(c->env, t, &d))
        return 0;
    /* The VM formats floats with the same libc call. */
    n = snprintf(tmp, sizeof tmp, "%.6e", d);
    if (n <= 0 || (size_t)n >= sizeof tmp)
        return 0;
    bmt_out_s(o, tmp, (size_t)n);
    return 1;
}

static int put_tuple(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t,
                     unsigned depth)
{
    const ERL_NIF_TERM *el;
    int arity, i;
    if (!enif_get_tuple(c->env, t, &arity, &el))
        return 0;
    bmt_out_c(o, '{');
    for (i = 0; i < arity && !bmt_out_full(o); i++) {
        if (i)
            bmt_out_c(o, ',');
        put_subterm(c, o, el[i], depth + 1);
    }
    bmt_out_c(o, '}');
    return 1;
}

static int put_map(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t,
                   unsigned depth)
{
    size_t n;
    ErlNifMapIterator it;
    ERL_NIF_TERM k, v;
    int first = 1;
    if (!enif_get_map_size(c->env, t, &n) || n > FLATMAP_MAX_KEYS)
        return 0;
    /* A flatmap iterator walks the key array in place: no allocation. */
    if (!enif_map_iterator_create(c->env, t, &it, ERL_NIF_MAP_ITERATOR_FIRST))
        return 0;
    bmt_out_s(o, "#{", 2);
    while (!bmt_out_full(o) && enif_map_iterator_get_pair(c->env, &it, &k, &v)) {
        if (!first)
            bmt_out_c(o, ',');
        first = 0;
        put_subterm(c, o, k, depth + 1);
        bmt_out_s(o, "=>", 2);
        put_subterm(c, o, v, depth + 1);
        enif_map_iterator_next(c->env, &it);
    }
    enif_map_iterator_destroy(c->env, &it);
    bmt_out_c(o, '}');
    return 1;
}

static void put_subterm(const struct ctx *c, struct bmt_text_out *o, ERL_NIF_TERM t,
                     unsigned depth)
{
    if (bmt_out_full(o))
        return;
    if (c->cache && is_immediate(t)) {
        /* Warm atoms, pids and ports without asking the VM for the type:
         * a slot holds only words of its own kind, so a key match is the
         * same term. */
        const struct bmt_atom_cache_entry *a =
            &c->cache->atoms.slot[slot_of(t, ATOM_CACHE_BITS)];
        const struct bmt_id_cache_entry *d =
            &c->cache->ids.slot[slot_of(t, ID_CACHE_BITS)];
        if (a->key == t) {
            bmt_out_s(o, a->text, a->len_bytes);
            return;
        }
        if (d->key == t) {
            bmt_out_s(o, d->text, d->len_bytes);
            return;
        }
    }
    if (depth > BMT_TERM_TEXT_MAX_DEPTH) {
        put_fallback(o, t);
        return;
    }
    switch (enif_term_type(c->env, t)) {
    case ERL_NIF_TERM_TYPE_ATOM:
        put_atom(c, o, t);
        return;
    case ERL_NIF_TERM_TYPE_INTEGER:
        if (put_integer(c, o, t))
            return;
        break;
    case ERL_NIF_TERM_TYPE_FLOAT:
        if (put_float(c, o, t))
            return;
        break;
    case ERL_NIF_TERM_TYPE_PID:
    case ERL_NIF_TERM_TYPE_PORT:
        put_pid_or_port(c->cache ? &c->cache->ids : NULL, o, t);
        return;
    case ERL_NIF_TERM_TYPE_BITSTRING: {
        ErlNifBinary bin;
        /* Fails for bitstrings whose size is not whole bytes. */
        if (enif_inspect_binary(c->env, t, &bin)) {
            bmt_put_binary(o, bin.data, bin.size, c->scan_budget);
            return;
        }
        break;
    }
    case ERL_NIF_TERM_TYPE_TUPLE:
        if (put_tuple(c, o, t, depth))
            return;
        break;
    case ERL_NIF_TERM_TYPE_LIST:
        if (enif_is_empty_list(c->env, t)) {
            bmt_out_s(o, "[]", 2);
            return;
        }
        put_list(c, o, t, depth);
        return;
    case ERL_NIF_TERM_TYPE_MAP:
        if (put_map(c, o, t, depth))
            return;
        break;
    default:
        break;
    }
    put_fallback(o, t);
}

/* ---- entry points --------------------------------------------------- */

void bmt_text_cache_init(struct bmt_text_cache *cache)
{
    memset(cache, 0, sizeof *cache);
}

/* ---- the shallow fast path ----------------------------------------- */

size_t bmt_term_text_general(struct bmt_text_cache *cache, ErlNifEnv *env, ERL_NIF_TERM term,
                             char *buf, size_t size)
{
    long budget = BMT_TEXT_SCAN_BUDGET;
    struct ctx c = { env, cache, &budget };
    struct bmt_text_out o = { buf, buf + size - 1 };

    if (size > BMT_TERM_TEXT_NATIVE_MAX_BYTES)
        put_fallback(&o, term);
    else
        put_subterm(&c, &o, term, 0);
    *o.p = '\0';
    return (size_t)(o.p - buf);
}

size_t bmt_term_text_cached(struct bmt_text_cache *cache, ErlNifEnv *env,
                            ERL_NIF_TERM term, char *buf, size_t size)
{
    size_t n = bmt_term_text_flat(cache, env, term, buf, size);
    return n != BMT_TERM_TEXT_NOT_FLAT ? n : bmt_term_text_general(cache, env, term, buf, size);
}

size_t bmt_term_text(ErlNifEnv *env, ERL_NIF_TERM term, char *buf,
                     size_t size)
{
    return bmt_term_text_cached(NULL, env, term, buf, size);
}

size_t bmt_id_text(struct bmt_id_cache *ids, ErlNifEnv *env,
                   ERL_NIF_TERM term, char *buf, size_t size)
{
    struct bmt_text_out o = { buf, buf + size - 1 };

    /* A local pid or port (an immediate so tagged) without asking the VM
     * its type: put_pid_or_port prints it or hands it to the VM. */
    if (((term & 0xF) != 0x3 && (term & 0xF) != 0x7) || size > BMT_TERM_TEXT_NATIVE_MAX_BYTES) {
        int type = enif_term_type(env, term);
        if ((type != ERL_NIF_TERM_TYPE_PID && type != ERL_NIF_TERM_TYPE_PORT)
            || size > BMT_TERM_TEXT_NATIVE_MAX_BYTES)
            return bmt_term_text(env, term, buf, size);
    }
    put_pid_or_port(ids, &o, term);
    *o.p = '\0';
    return (size_t)(o.p - buf);
}
