/* Asymmetric fences (contract in fence.h). */
#include "fence.h"

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <unistd.h>

/* A property of the process, not of any one library state: every copy of
 * the library in the process (code upgrade, dyntrace shim) may share it. */
int bmt_fence_asymmetric;

static long membarrier(int cmd)
{
    return syscall(SYS_membarrier, cmd, 0, 0);
}

int bmt_fence_init(void)
{
    if (__atomic_load_n(&bmt_fence_asymmetric, __ATOMIC_ACQUIRE))
        return 1;
    long supported = membarrier(MEMBARRIER_CMD_QUERY);
    if (supported < 0 || !(supported & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
        membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0)
        return 0;
    /* Published before any session exists, so no writer can be between its
     * two halves when the mode changes. */
    __atomic_store_n(&bmt_fence_asymmetric, 1, __ATOMIC_RELEASE);
    return 1;
}

void bmt_fence_heavy(void)
{
    /* Once registered, the expedited command fails only for a bad command
     * (membarrier(2)); the fence after it is what the symmetric mode needs. */
    if (__atomic_load_n(&bmt_fence_asymmetric, __ATOMIC_ACQUIRE))
        (void)membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED);
    atomic_thread_fence(memory_order_seq_cst);
}
