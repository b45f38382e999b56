/* Who ended a wait (c_src/cli/model/wakers.h, proc_state.h) against their
 * contracts, built with AddressSanitizer by test/cli/run.sh:
 *  - the tally keeps at most BMT_WAKERS_MAX senders whatever number it is
 *    given; on random sequences of waits by up to 12 senders (against an
 *    exact reference) the sum it holds is the sum given, no sender's
 *    figure is over its true time, and with up to BMT_WAKERS_MAX senders
 *    every figure is exact; a newcomer equal to the
 *    smallest folds into "other", one larger takes its slot; merge scales
 *    by the weight; order is most time first;
 *  - a process out, sent a message by X then by Y, in, taking it: the wait
 *    up to X's send is X's (woke_ns, woke_from); a receive timeout, or a
 *    send whose sender is not given (BMT_PS_SENT_TO), names nobody; a
 *    send seen late (to an alias) ends the wait when it came first.
 * Prints TAP lines; exits non-zero on a failure.
 *   cc -Ic_src -Ic_src/cli test/cli/test_wakers.c c_src/cli/model/wakers.c \
 *      c_src/cli/model/proc_state.c -o t && ./t
 */
#include "model/proc_state.h"
#include "model/wakers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

static void ok(int good, const char *what)
{
    checks++;
    if (!good)
        failures++;
    printf("%s %d - %s\n", good ? "ok" : "not ok", checks, what);
}

static uint64_t named(const struct bmt_wakers *t, uint32_t pid)
{
    for (unsigned i = 0; i < t->count; i++)
        if (t->pid[i] == pid)
            return t->ns[i];
    return 0;
}

static void folding(void)
{
    struct bmt_wakers t;
    bmt_wakers_clear(&t);
    for (uint32_t p = 0; p < BMT_WAKERS_MAX; p++)
        bmt_wakers_add(&t, p, 10);
    bmt_wakers_add(&t, 100, 10); /* equal to the smallest: folds */
    ok(t.count == BMT_WAKERS_MAX && t.other_ns == 10 && !named(&t, 100),
       "a newcomer no larger than the smallest sender folds into other");
    bmt_wakers_add(&t, 101, 25); /* larger: takes a slot, that one folds */
    ok(t.count == BMT_WAKERS_MAX && t.other_ns == 20 && named(&t, 101) == 25,
       "a larger newcomer takes the smallest one's slot, which folds into other");
    bmt_wakers_add(&t, 101, 5);
    ok(named(&t, 101) == 30 && bmt_wakers_total(&t) == 80, "a sender named adds to its slot");
    unsigned order[BMT_WAKERS_MAX];
    unsigned n = bmt_wakers_order(&t, order);
    int sorted = n == t.count;
    for (unsigned i = 1; i < n; i++)
        sorted = sorted && t.ns[order[i - 1]] >= t.ns[order[i]];
    ok(sorted && t.pid[order[0]] == 101, "order: most time first");
    struct bmt_wakers m;
    bmt_wakers_clear(&m);
    bmt_wakers_merge(&m, &t, 3);
    ok(bmt_wakers_total(&m) == 240 && named(&m, 101) == 90 && m.other_ns == 60,
       "merge scales each figure and other by the weight");
    bmt_wakers_clear(&m);
    bmt_wakers_add(&m, 7, 0);
    ok(bmt_wakers_empty(&m), "a wait of 0 ns names nobody");
}

static void random_sequences(void)
{
    int bounded = 1, summed = 1, never_over = 1, exact = 1;
    srand(16);
    for (int round = 0; round < 2000; round++) {
        struct bmt_wakers t;
        uint64_t truth[12] = {0}, total = 0;
        unsigned senders = 1 + (unsigned)rand() % 12, waits = 1 + (unsigned)rand() % 200;
        bmt_wakers_clear(&t);
        for (unsigned i = 0; i < waits; i++) {
            /* Skewed: low pids wake more often, with longer waits. */
            uint32_t p = (uint32_t)(rand() % (int)senders) % (1 + (unsigned)rand() % senders);
            uint64_t ns = 1 + (uint64_t)(rand() % 1000) * (senders - p);
            truth[p] += ns;
            total += ns;
            bmt_wakers_add(&t, p, ns);
            bounded = bounded && t.count <= BMT_WAKERS_MAX;
        }
        summed = summed && bmt_wakers_total(&t) == total;
        for (uint32_t p = 0; p < senders; p++) {
            never_over = never_over && named(&t, p) <= truth[p];
            if (senders <= BMT_WAKERS_MAX)
                exact = exact && named(&t, p) == truth[p] && !t.other_ns;
        }
    }
    ok(bounded, "random waits: never more than BMT_WAKERS_MAX senders kept");
    ok(summed, "random waits: the tally holds all the time given, other included");
    ok(never_over, "random waits: no sender's figure is over its true time");
    ok(exact, "random waits: up to BMT_WAKERS_MAX senders, each figure exact, nothing in other");
}

static void process_states(void)
{
    struct bmt_window w = {0, UINT64_MAX};
    struct bmt_pstate p;
    bmt_pstate_init(&p, 0);
    bmt_pstate_apply(&p, BMT_PS_IN, 0, &w);
    bmt_pstate_apply(&p, BMT_PS_OUT, 100, &w);
    bmt_pstate_sent(&p, 400, 7);
    bmt_pstate_sent(&p, 450, 8);
    bmt_pstate_apply(&p, BMT_PS_IN, 500, &w);
    bmt_pstate_apply(&p, BMT_PS_RECEIVE, 510, &w);
    ok(p.woke_ns == 300 && p.woke_from == 7 && p.cum[BMT_K_WAITING] == 300,
       "the wait up to the first send while out is its sender's");
    p.woke_ns = 0;
    bmt_pstate_apply(&p, BMT_PS_OUT, 600, &w);
    bmt_pstate_apply(&p, BMT_PS_IN, 900, &w);
    bmt_pstate_apply(&p, BMT_PS_TIMEOUT, 910, &w);
    ok(p.woke_ns == 0 && p.cum[BMT_K_WAITING] == 600, "a receive timeout names nobody");
    bmt_pstate_apply(&p, BMT_PS_OUT, 1000, &w);
    bmt_pstate_apply(&p, BMT_PS_SENT_TO, 1200, &w);
    bmt_pstate_apply(&p, BMT_PS_IN, 1300, &w);
    bmt_pstate_apply(&p, BMT_PS_RECEIVE, 1300, &w);
    ok(p.woke_ns == 0 && p.cum[BMT_K_WAITING] == 800, "a send without its sender names nobody");
    bmt_pstate_apply(&p, BMT_PS_OUT, 2000, &w);
    bmt_pstate_sent(&p, 2500, 9);
    bmt_pstate_apply(&p, BMT_PS_IN, 2600, &w);
    bmt_pstate_sent_before(&p, 2200, 11); /* to an alias, before 9's */
    bmt_pstate_sent_before(&p, 1900, 12); /* before it went out: not this wait */
    bmt_pstate_apply(&p, BMT_PS_RECEIVE, 2600, &w);
    ok(p.woke_ns == 200 && p.woke_from == 11,
       "a send seen late that came first ends the wait; one before the process went out does not");
}

int main(void)
{
    folding();
    random_sequences();
    process_states();
    printf("%d passed, %d failed\n", checks - failures, failures);
    return failures ? 1 : 0;
}
