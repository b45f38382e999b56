/* Keeping an earlier copy of this library mapped when a state moves on.
 *
 * A code upgrade from another file (`l(beamtrace)` with another build's
 * path, or a second `beamtrace record` shipping to a new directory while a
 * session runs) hands the state to the new copy, and the VM closes the old
 * copy once its module is purged. The state's consumer threads were started
 * by that copy and run its code, so the copy must stay mapped: it is
 * pinned (RTLD_NODELETE) at the hand-over. Otherwise nothing is pinned, and
 * the last unload (every session stopped, every thread joined) leaves the
 * library free to go: after `stop --node` the node's memory map is as it
 * was before beamtrace came.
 */
#ifndef BMT_NIF_PIN_H
#define BMT_NIF_PIN_H

/* An address inside the copy of this library that runs the caller. */
const void *bmt_pin_here(void);

/* Keeps the copy of this library that holds `code` (an address
 * bmt_pin_here gave in that copy) mapped until the process exits, when it
 * is another copy than the caller's; nothing when it is the caller's own.
 * Returns 0, or -1 when that copy could not be found or pinned. */
int bmt_pin_other_copy(const void *code);

#endif
