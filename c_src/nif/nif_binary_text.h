/*
 * A binary's text as OTP prints it ("%T"): <<"...">> when every byte is
 * printable, else <<1,2,3>>; and the scan bound the term-text writers
 * share. Pure: no VM call. Reentrant.
 */
#ifndef BMT_NIF_BINARY_TEXT_H
#define BMT_NIF_BINARY_TEXT_H

#include "nif_term_out.h"

#include <stddef.h>

/* Whether a binary prints as <<"...">> depends on every byte, and whether a
 * list prints as "..." on every element, however little of it fits the
 * output. The VM scans them all; we scan at most BMT_TEXT_SCAN_BUDGET bytes and
 * cells per term printed (so an event's work is bounded by its message
 * length plus this, whatever the term), and past the budget take what was
 * scanned as the answer. Output differs from "%T" only for a binary or
 * list longer than the budget whose printable prefix is followed by an
 * unprintable byte or element. */
#define BMT_TEXT_SCAN_BUDGET (64 * 1024)

/* Writes the text of the binary b[0..n) at the cursor, scanning at most
 * *budget of its bytes (and taking them from it) to choose the form. */
void bmt_put_binary(struct bmt_text_out *o, const unsigned char *b, size_t n, long *budget);

#endif
