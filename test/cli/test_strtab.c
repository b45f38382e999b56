/* The interned-string table (c_src/cli/base/strtab.h) against its
 * contract, built with AddressSanitizer by test/cli/run.sh: every string
 * of 0 to 40 bytes, and every variant of it with one byte changed, gets
 * its own id and is found again with it; a string never interned is not
 * found; the table keeps the bytes and lengths; and no lookup reads a byte
 * outside the string it is given (each string is looked up from its own
 * allocation of exactly its length, so ASan reports a read beyond it).
 * The keys of strings up to 16 bytes stand for the whole string: a key
 * that missed a byte would make two of these variants one id.
 * Prints TAP lines; exits non-zero on a failure.
 *   cc -Ic_src -Ic_src/cli test/cli/test_strtab.c c_src/cli/base/strtab.c -o t && ./t
 */
#include "base/strtab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEN 40

static int failures, checks;

static void check(int ok, const char *what, size_t len, size_t at)
{
    checks++;
    if (!ok) {
        failures++;
        printf("not ok - %s (length %zu, byte %zu)\n", what, len, at);
    }
}

/* A copy of `len` bytes in an allocation of exactly that size. */
static char *exact(const char *s, size_t len)
{
    char *p = malloc(len ? len : 1);
    if (!p) {
        perror("malloc");
        exit(2);
    }
    memcpy(p, s, len);
    return p;
}

/* The base string of `len` bytes, and its variant with byte `at` changed
 * (at == len: the base itself). */
static void make(char *buf, size_t len, size_t at)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)('a' + (i * 7 + len) % 26);
    if (at < len)
        buf[at] = (char)(buf[at] ^ 0x20);
}

int main(void)
{
    struct bmt_strtab t;
    bmt_strtab_init(&t);
    char buf[MAX_LEN];
    int64_t ids[MAX_LEN + 1][MAX_LEN + 1];
    /* Intern every string and variant. */
    for (size_t len = 0; len <= MAX_LEN; len++)
        for (size_t at = 0; at <= len; at++) {
            make(buf, len, at);
            char *s = exact(buf, len);
            check(bmt_strtab_find(&t, s, len) == -1, "a string not interned is not found", len, at);
            ids[len][at] = bmt_strtab_intern(&t, s, len);
            check(ids[len][at] == (int64_t)t.count - 1, "a new string gets the next id", len, at);
            free(s);
        }
    /* Find each again, with its id, its bytes and its length. */
    for (size_t len = 0; len <= MAX_LEN; len++)
        for (size_t at = 0; at <= len; at++) {
            make(buf, len, at);
            char *s = exact(buf, len);
            int64_t id = ids[len][at];
            check(bmt_strtab_find(&t, s, len) == id, "found again with its id", len, at);
            check(bmt_strtab_intern(&t, s, len) == id, "interned again: the same id", len, at);
            check(bmt_strtab_len(&t, (uint32_t)id) == len &&
                      memcmp(bmt_strtab_str(&t, (uint32_t)id), buf, len) == 0 &&
                      bmt_strtab_str(&t, (uint32_t)id)[len] == '\0',
                  "keeps the bytes, NUL-terminated", len, at);
            free(s);
        }
    /* Many strings of one shape (pids): the index grows, ids stay. */
    struct bmt_strtab pids;
    bmt_strtab_init(&pids);
    for (int pass = 0; pass < 2; pass++)
        for (unsigned i = 0; i < 20000; i++) {
            char pid[32];
            int n = snprintf(pid, sizeof pid, "<0.%u.0>", i);
            char *s = exact(pid, (size_t)n);
            int64_t id = bmt_strtab_intern(&pids, s, (size_t)n);
            check(id == (int64_t)i, pass ? "a pid is found with its id after growth"
                                         : "pids get dense ids", (size_t)n, i);
            free(s);
        }
    check(pids.count == 20000, "20000 distinct pids", 0, 0);
    bmt_strtab_free(&pids);
    bmt_strtab_free(&t);
    printf("%s - strtab: %d checks, %d failed\n", failures ? "not ok" : "ok", checks, failures);
    return failures ? 1 : 0;
}
