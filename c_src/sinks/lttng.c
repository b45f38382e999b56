/* LTTng-UST sink loader: dlopens the provider library priv/beamtrace_lttng.so
 * (generated from the catalogue by tools/gen_lttng.c) so that the NIF never
 * links liblttng-ust and still loads and records where it is missing.
 *
 * Concurrency: bmt_lttng_load runs once, in the NIF's load callback, and
 * bmt_lttng_unload once, in its last unload, with no event in flight. In
 * between, the returned provider is immutable; its states are read and its
 * emit() called from every scheduler thread at once.
 *
 * What loading costs: dlopen runs lttng-ust's constructors. liblttng-ust
 * starts its listener threads (global and per-user session daemon) and waits
 * for them to register, for at most LTTNG_UST_REGISTER_TIMEOUT ms (default
 * 3000; 0 = do not wait, -1 = forever), read from the VM's environment.
 * Measured on lttng-ust 2.13 (test/lttng/driver.c):
 *  - no lttng-sessiond: the connects fail at once, load takes ~3 ms; the
 *    threads then wait on lttng-ust's shared-memory futex, so a daemon
 *    started later sees the VM within a moment (test: absent);
 *  - a daemon with no session: ~3 ms; with an active session enabling our
 *    events: ~60 ms (the enablers are pushed before dlopen returns, so the
 *    first events are not lost);
 *  - a daemon that accepts but never answers (SIGSTOPped): the full
 *    timeout, 3 s. Set LTTNG_UST_REGISTER_TIMEOUT (e.g. 100) in the VM's
 *    environment to bound it; we do not setenv it ourselves (setenv is not
 *    thread-safe in a running VM) and we do not override the user's value.
 * A daemon that dies or restarts later is handled by the same threads: the
 * VM and the recorder never block on it (test: killed).
 *
 * dlclose: lttng-ust unregisters the probes in the library's destructor;
 * liblttng-ust itself stays mapped (it is built -z nodelete), so a reload
 * registers again with the same listener threads.
 */
#define _GNU_SOURCE /* dladdr */
#include "sinks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROVIDER_FILE "beamtrace_lttng.so"

static int disabled_by_env(void)
{
    const char *v = getenv("BEAMTRACE_LTTNG");
    return v && (strcmp(v, "0") == 0 || strcmp(v, "off") == 0);
}

const struct bmt_lttng_provider *bmt_lttng_load(const char *priv_dir, char *why, size_t why_size)
{
    char path[4096];
    const struct bmt_lttng_provider *provider;
    void *handle;

    if (disabled_by_env()) {
        snprintf(why, why_size, "disabled by BEAMTRACE_LTTNG=%s", getenv("BEAMTRACE_LTTNG"));
        return NULL;
    }
    if (!priv_dir || !*priv_dir) {
        snprintf(why, why_size, "no priv directory given to find %s", PROVIDER_FILE);
        return NULL;
    }
    if ((size_t)snprintf(path, sizeof path, "%s/%s", priv_dir, PROVIDER_FILE) >= sizeof path) {
        snprintf(why, why_size, "priv directory path too long");
        return NULL;
    }
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        /* Missing file (built without lttng-ust) or missing liblttng-ust.so.1. */
        const char *err = dlerror();
        snprintf(why, why_size, "cannot load %s: %s", path, err ? err : "unknown error");
        return NULL;
    }
    dlerror();
    provider = dlsym(handle, "bmt_lttng_provider");
    if (!provider) {
        snprintf(why, why_size, "%s has no bmt_lttng_provider symbol", path);
        goto fail;
    }
    if (provider->abi != BMT_LTTNG_ABI) {
        snprintf(why, why_size, "%s has provider ABI %u, this NIF needs %u: rebuild with make",
                 path, (unsigned)provider->abi, (unsigned)BMT_LTTNG_ABI);
        goto fail;
    }
    if (provider->tracepoint_count != BMT_TP_COUNT || !provider->state || !provider->emit) {
        snprintf(why, why_size, "%s has %u tracepoints, this NIF's catalogue %u: rebuild with make",
                 path, (unsigned)provider->tracepoint_count, (unsigned)BMT_TP_COUNT);
        goto fail;
    }
    if (why_size)
        why[0] = 0;
    return provider;

fail:
    dlclose(handle);
    return NULL;
}

/* The dlopen handle is found again from the provider's address (no global
 * to keep it in): dlopen with RTLD_NOLOAD takes a second reference to the
 * library already loaded, and two dlcloses drop it and load's. */
void bmt_lttng_unload(const struct bmt_lttng_provider *provider)
{
    Dl_info info;
    void *handle;

    if (!provider || !dladdr(provider, &info) || !info.dli_fname)
        return;
    handle = dlopen(info.dli_fname, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (!handle)
        return;
    dlclose(handle);
    dlclose(handle);
}
