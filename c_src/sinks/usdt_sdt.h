/* sys/sdt.h's probe macros, or stubs that compile to nothing.
 *
 * USDT probes need sys/sdt.h (Debian's systemtap-sdt-dev), which a build
 * with only erlang-dev, a C compiler and make does not have (nor Alpine or
 * slim Docker images). BMT_USDT is 1 when the compiler finds the header and
 * 0 when it does not (the Makefile passes its own finding, or 0 with
 * `make USDT=0`; a build outside the Makefile asks __has_include). With 0 every
 * STAP_PROBEn is an empty statement: its arguments are named only inside
 * sizeof, so they are never evaluated and their variables count as used;
 * no probe note is emitted and no tracer can attach. The semaphores stay
 * (plain zero variables), so the USDT sink's "wanted?" checks answer no.
 *
 * BMT_USDT_COMPILED_IN is 1 or 0 for code that reports which sinks a build
 * has (`beamtrace:sinks()`, `beamtrace list --usdt`). */
#ifndef BMT_USDT_SDT_H
#define BMT_USDT_SDT_H

#ifndef BMT_USDT
#if defined(__has_include)
#if __has_include(<sys/sdt.h>)
#define BMT_USDT 1
#else
#define BMT_USDT 0
#endif
#else
#define BMT_USDT 1
#endif
#endif

#if BMT_USDT
#include <sys/sdt.h>
#define BMT_USDT_COMPILED_IN 1
#else
#define BMT_USDT_COMPILED_IN 0
#define BMT_SDT_USE(a) ((void)sizeof(a))
#define STAP_PROBE(p, n) do {} while (0)
#define STAP_PROBE1(p, n, a1) do { BMT_SDT_USE(a1); } while (0)
#define STAP_PROBE2(p, n, a1, a2) do { BMT_SDT_USE(a1); BMT_SDT_USE(a2); } while (0)
#define STAP_PROBE3(p, n, a1, a2, a3) do { STAP_PROBE2(p, n, a1, a2); BMT_SDT_USE(a3); } while (0)
#define STAP_PROBE4(p, n, a1, a2, a3, a4) \
    do { STAP_PROBE3(p, n, a1, a2, a3); BMT_SDT_USE(a4); } while (0)
#define STAP_PROBE5(p, n, a1, a2, a3, a4, a5) \
    do { STAP_PROBE4(p, n, a1, a2, a3, a4); BMT_SDT_USE(a5); } while (0)
#define STAP_PROBE6(p, n, a1, a2, a3, a4, a5, a6) \
    do { STAP_PROBE5(p, n, a1, a2, a3, a4, a5); BMT_SDT_USE(a6); } while (0)
#define STAP_PROBE7(p, n, a1, a2, a3, a4, a5, a6, a7) \
    do { STAP_PROBE6(p, n, a1, a2, a3, a4, a5, a6); BMT_SDT_USE(a7); } while (0)
#define STAP_PROBE8(p, n, a1, a2, a3, a4, a5, a6, a7, a8) \
    do { STAP_PROBE7(p, n, a1, a2, a3, a4, a5, a6, a7); BMT_SDT_USE(a8); } while (0)
#define STAP_PROBE9(p, n, a1, a2, a3, a4, a5, a6, a7, a8, a9) \
    do { STAP_PROBE8(p, n, a1, a2, a3, a4, a5, a6, a7, a8); BMT_SDT_USE(a9); } while (0)
#define STAP_PROBE10(p, n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10) \
    do { STAP_PROBE9(p, n, a1, a2, a3, a4, a5, a6, a7, a8, a9); BMT_SDT_USE(a10); } while (0)
#define STAP_PROBE11(p, n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11) \
    do { STAP_PROBE10(p, n, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10); BMT_SDT_USE(a11); } while (0)
#endif

#endif
