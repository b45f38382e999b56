/* The USDT semaphores (usdt_wants.h reads them, usdt.c's probe sites
 * fire on them): one per probe of usdt.def's PROVIDED and APPROX rows, and
 * 1024 for the NUMBERED user_trace-n row. A tracer increments one while
 * attached to its probe; the probe notes carry their addresses.
 *
 * Those usdt_wants.h groups (USDT_IN_WORD_*) are half-words of the words
 * below, named by symbols the assembler sets at their addresses (in this
 * file: a symbol can only be set at an address its own file defines); the
 * rest are variables of their own. All live in the `.probes` section, where
 * sys/sdt.h puts semaphores.
 */
#include "usdt_wants.h"

/* The words themselves, defined in the same top-level assembly as the
 * symbols set inside them: a `.set` against a C object breaks when link-time
 * optimisation puts the two in different partitions. */
#define USDT_WORD_ASM(word)                                                              \
    ".globl bmt_usdt_word_" #word "\n"                                                   \
    ".hidden bmt_usdt_word_" #word "\n"                                                  \
    ".type bmt_usdt_word_" #word ", @object\n"                                           \
    ".size bmt_usdt_word_" #word ", 8\n"                                                 \
    "bmt_usdt_word_" #word ":\n"                                                         \
    ".zero 8\n"
__asm__(".pushsection .probes, \"aw\"\n"
        ".balign 8\n"
        USDT_WORD_ASM(call) USDT_WORD_ASM(scheduled) USDT_WORD_ASM(send)
        ".popsection\n");
_Static_assert(sizeof(union bmt_usdt_word) == 8, "a word is the 8 bytes the assembly makes");

#define USDT_CAT(a, b) USDT_CAT_(a, b)
#define USDT_CAT_(a, b) a##b
#define SEMAPHORE(name) USDT_CAT(SEMAPHORE_IN_WORD_, USDT_IN_A_WORD(name))(name)
#define SEMAPHORE_IN_WORD_0(name) \
    __extension__ unsigned short erlang_##name##_semaphore __attribute__((section(".probes")));
#define SEMAPHORE_IN_WORD_1(name) SEMAPHORE_AT_OF(name, USDT_IN_WORD_##name)
#define SEMAPHORE_AT_OF(name, ...) SEMAPHORE_AT(name, __VA_ARGS__)
#define SEMAPHORE_AT(name, tilde, one, word, index)                                      \
    _Static_assert(index < 4, "a word holds four semaphores");                           \
    /* Two names on one half-word would be one label set twice: the     \
     * assembler refuses that only for the same name, so this does. */  \
    enum { USDT_SLOT_##word##_##index = index };                                          \
    __asm__(".globl erlang_" #name "_semaphore\n"                                        \
            ".hidden erlang_" #name "_semaphore\n"                                       \
            ".type erlang_" #name "_semaphore, @object\n"                                \
            ".size erlang_" #name "_semaphore, 2\n"                                      \
            ".set erlang_" #name "_semaphore, bmt_usdt_word_" #word " + 2 * " #index);

#define SEMAPHORE_PROVIDED(symbol) SEMAPHORE(symbol)
#define SEMAPHORE_APPROX(symbol) SEMAPHORE(symbol)
#define SEMAPHORE_NONE(symbol)
#define SEMAPHORE_NUMBERED(symbol)
#define USDT(symbol, name, status, source, arguments, note) SEMAPHORE_##status(symbol)
#include "core/usdt.def"
#undef USDT
#define USER_N_SEMAPHORE(n) SEMAPHORE(user_trace__n##n)
LABELS(USER_N_SEMAPHORE)
