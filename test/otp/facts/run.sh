#!/usr/bin/env bash
# Builds the echo tracer and prints bmt_otp_facts' lines for this VM.
set -eu
cd "$(dirname "$0")"
out=../../out/facts
mkdir -p "$out"
inc=$(erl -noshell -eval 'io:format("~ts/erts-~ts/include", [code:root_dir(), erlang:system_info(version)]), halt().')
${CC:-cc} -std=gnu11 -O1 -Wall -Wextra -Werror -fPIC -shared -I"$inc" -o "$out/bmt_echo_tracer.so" echo_tracer.c
erlc -o "$out" bmt_echo_tracer.erl bmt_otp_facts.erl
grep -c enif_term_size "$inc/erl_nif_api_funcs.h" | sed 's/^/enif_term_size_in_erl_nif_api_funcs_h: /'
erl -noshell -pa "$out" -run bmt_otp_facts main
