/* Elixir names as Elixir writes them. The VM (and so the trace, which
 * keeps OTP's text) prints an Elixir module as the atom 'Elixir.MyApp.Worker';
 * the analyses show MyApp.Worker.handle_call/3, as Elixir's
 * Exception.format_mfa/3 does (anonymous functions as
 * "anonymous fn/1 in MyApp.Worker.handle_call/3", names that are not
 * identifiers quoted). Erlang names are left alone. Pure; reentrant.
 */
#ifndef BMT_CLI_ELIXIR_H
#define BMT_CLI_ELIXIR_H

#include <stddef.h>

/* Writes the display form of the "m:f/a" text `mfa` (`len` bytes) into
 * `out` (`cap` bytes, NUL-terminated, cut if needed): Elixir's form when the
 * module is an Elixir module, else the text as it is. Returns `out`. */
const char *bmt_elixir_mfa(const char *mfa, size_t len, char *out, size_t cap);

/* Writes the display form of an atom or term text (a registered name):
 * 'Elixir.MyApp.Registry' becomes MyApp.Registry, anything else is copied.
 * Returns `out`. */
const char *bmt_elixir_atom(const char *text, size_t len, char *out, size_t cap);

#endif
