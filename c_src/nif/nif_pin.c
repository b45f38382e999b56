/* Pinning an earlier copy of this library (contract in nif_pin.h). Runs
 * only in the NIF's upgrade callback, never on the hot path. */
#define _GNU_SOURCE /* dladdr, RTLD_NODELETE, RTLD_NOLOAD */
#include "nif_pin.h"

#include <dlfcn.h>

/* Its address is inside this copy's mapping, whatever the copy's file. */
static const char here_marker;

const void *bmt_pin_here(void)
{
    return &here_marker;
}

int bmt_pin_other_copy(const void *code)
{
    Dl_info theirs, ours;
    if (!code || !dladdr(code, &theirs) || !theirs.dli_fname || !dladdr(&here_marker, &ours))
        return -1;
    if (theirs.dli_fbase == ours.dli_fbase)
        return 0;
    /* RTLD_NOLOAD: the copy already mapped (matched by the name the VM
     * loaded it by, even when that file has since been deleted); the
     * reference taken here is never dropped, and RTLD_NODELETE keeps the
     * copy past every dlclose. */
    void *handle = dlopen(theirs.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE);
    return handle ? 0 : -1;
}
