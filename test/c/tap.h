/* Minimal TAP helpers shared by the C tests (the .c files in test/c).
 *
 * A test binary groups its assertions: CHECK() records a failure with its
 * location and keeps going, tap_group() prints one "ok - name" or
 * "not ok - name" line for the checks since the previous group, and
 * tap_exit() turns any failure into a non-zero exit status, including
 * checks made after the last group. stdout is flushed after every line so
 * that a sanitizer aborting at exit (LeakSanitizer runs from atexit and
 * skips stdio) cannot swallow the results.
 */
#ifndef BMT_TEST_TAP_H
#define BMT_TEST_TAP_H

#include <stdio.h>

static int tap_group_failures; /* failed checks in the current group */
static int tap_total_failures; /* failed groups in the whole run */

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            if (tap_group_failures++ < 10)                                             \
                printf("#   %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);    \
        }                                                                              \
    } while (0)

/* Like CHECK, with a printf-style explanation printed on failure. */
#define CHECKF(cond, ...)                                                              \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            if (tap_group_failures++ < 10) {                                           \
                printf("#   %s:%d: check failed: %s: ", __FILE__, __LINE__, #cond);    \
                printf(__VA_ARGS__);                                                   \
                printf("\n");                                                          \
            }                                                                          \
        }                                                                              \
    } while (0)

static inline void tap_group(const char *name)
{
    if (tap_group_failures) {
        printf("not ok - %s (%d failed checks)\n", name, tap_group_failures);
        tap_total_failures++;
    } else {
        printf("ok - %s\n", name);
    }
    tap_group_failures = 0;
    fflush(stdout);
}

static inline void tap_skip(const char *name, const char *reason)
{
    printf("ok - %s # SKIP %s\n", name, reason);
    fflush(stdout);
}

/* Checks that failed after the last tap_group() still fail the run: they
 * get a line of their own. */
static inline int tap_exit(void)
{
    if (tap_group_failures)
        tap_group("checks after the last group");
    fflush(stdout);
    return tap_total_failures ? 1 : 0;
}

#endif
