#!/usr/bin/env bash
# Builds the term-text test NIF and beam into test/out/term_text/ and runs
# the byte-for-byte comparison of bmt_term_text against enif_snprintf("%T").
# Prints TAP lines; exits non-zero on any failure. Optional argument: the
# random seed to replay.
set -u
cd "$(dirname "$0")/../.."
out=test/out/term_text
mkdir -p "$out"
ERL=${ERL:-erl}
CC=${CC:-cc}
inc=$("$ERL" -noshell -eval 'io:format("~ts/erts-~ts/include",[code:root_dir(),erlang:system_info(version)]),halt().')
if ! "$CC" -std=gnu11 -O2 -g -Wall -Wextra -Wshadow -Wstrict-prototypes \
        -Wmissing-prototypes -Werror -fPIC -shared -I"$inc" -Ic_src \
        -o "$out/term_text_test_nif.so" test/erl/term_text_test_nif.c c_src/nif/nif_term_text.c; then
    echo "not ok - term_text: build test NIF"
    exit 1
fi
if ! erlc -Werror -o "$out" test/erl/bmt_term_text_test.erl; then
    echo "not ok - term_text: compile bmt_term_text_test.erl"
    exit 1
fi
ERL_CRASH_DUMP=$out/erl_crash.dump exec "$ERL" -noshell -pa "$out" -run bmt_term_text_test main "$@"
