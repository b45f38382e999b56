/*
 * An atom's text as OTP prints it ("%T"), from its Latin-1 name: quoted
 * when the VM quotes it, with its escapes. The quoting rules are listed in
 * nif_term_text.c, whose tests compare every case with the VM's printer.
 * Pure: no VM call. Reentrant.
 */
#ifndef BMT_NIF_ATOM_TEXT_H
#define BMT_NIF_ATOM_TEXT_H

#include <stddef.h>

/* Longest atom name (characters, Latin-1: a byte each). */
#define BMT_ATOM_NAME_MAX_BYTES 255
/* Longest Latin-1 atom text: 255 characters escaped as 4 bytes each,
 * plus 2 quotes. */
#define BMT_ATOM_TEXT_MAX_BYTES (255 * 4 + 2)

/* Renders the atom named by Latin-1 bytes s[0..n) into d, which holds
 * BMT_ATOM_TEXT_MAX_BYTES; returns the length. */
size_t bmt_atom_render(const unsigned char *s, size_t n, char *d);

#endif
