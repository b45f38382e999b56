#!/usr/bin/env bash
# Builds and records with only what the README says a build needs:
# erlang-dev (with erlang-base), a C compiler and make. Run by
# test/otp/matrix.sh inside a chroot holding just those packages (no
# sys/sdt.h, no lttng-ust, no pkg-config); works anywhere else too. TAP
# lines (see test/run_all.sh) and the closing "N passed, N failed" line.
set -u
cd "$(dirname "$0")/../.."
out=test/out/minimal
rm -rf "$out" && mkdir -p "$out"
TAP_PREFIX="minimal build: "
. test/lib/tap.sh
have_header() { printf '#include <%s>\n' "$1" | ${CC:-cc} -E -x c - >/dev/null 2>&1; }
sdt=no ust=no
have_header sys/sdt.h && sdt=yes
pkg-config --exists lttng-ust 2>/dev/null && ust=yes

erl -noshell -eval 'io:format("# OTP ~s, erts ~s~n", [erlang:system_info(otp_release), erlang:system_info(version)]), halt().'
echo "# sys/sdt.h: $sdt, lttng-ust: $ust"

make >"$out/make.log" 2>&1
rc=$?
check "make succeeds" '[ "$rc" -eq 0 ]' || sed 's/^/#   /' "$out/make.log"
version=$(sed -n 's/.*{vsn, *"\([^"]*\)"}.*/\1/p' src/beamtrace.app.src)
check "beamtrace --version prints the .app.src vsn ($version)" \
    '[ "$(priv/beamtrace --version)" = "beamtrace $version" ]'
if [ $sdt = yes ]; then
    skip "USDT probes compiled out without sys/sdt.h" "sys/sdt.h is present here"
else
    check "make says the USDT probes are compiled out" 'grep -q "SKIP    USDT probes: no sys/sdt.h" "$out/make.log"'
    check "beamtrace list --usdt says the probes are compiled out" \
        'priv/beamtrace list --usdt | grep -q "compiled out of this build"'
    check "no USDT probe note in the NIF" '! readelf -n priv/beamtrace_nif.so 2>/dev/null | grep -q stapsdt'
fi
if [ $ust = yes ]; then
    skip "LTTng provider skipped without lttng-ust" "lttng-ust is present here"
else
    check "make says the LTTng provider is skipped" 'grep -q "SKIP    priv/beamtrace_lttng.so" "$out/make.log"'
fi

# A node records through the built-in recorder; the CLI reads the trace.
erl -noshell -pa ebin -eval '
    [Dir] = init:get_plain_arguments(),
    io:format("sinks ~0p~n", [beamtrace:sinks()]),
    {ok, _} = beamtrace:start(#{dir => Dir}),
    erlang:trace(new, true, [procs, {tracer, beamtrace, []}]),
    [spawn(fun() -> register(list_to_atom("bmt_min_" ++ integer_to_list(I)), self()) end)
     || I <- lists:seq(1, 5)],
    timer:sleep(100),
    erlang:trace(all, false, [all]),
    {ok, #{events := N, discarded := D}} = beamtrace:stop(),
    io:format("events ~p discarded ~p~n", [N, D]),
    halt().' -extra "$PWD/$out/trace" >"$out/node.log" 2>&1
rc=$?
check "a node records a trace (start, erlang:trace/3, stop)" \
    '[ "$rc" -eq 0 ] && grep -qE "^events [1-9][0-9]* discarded 0$" "$out/node.log"' || sed 's/^/#   /' "$out/node.log"
check "sinks(): the recorder; USDT and LTTng say why they are unavailable when absent" \
    'grep -q "recorder => true" "$out/node.log" &&
     { [ $ust = yes ] || grep -q "lttng => {unavailable" "$out/node.log"; } &&
     { [ $sdt = yes ] || grep -q "usdt => {unavailable,<<\"compiled out" "$out/node.log"; }'
priv/beamtrace view "$out/trace" >"$out/view.txt" 2>"$out/view.err"
check "beamtrace view shows the 5 registrations" \
    '[ "$(grep -c "process_register: .*name = \"bmt_min_[1-5]\", type = \"register\"" "$out/view.txt")" = 5 ]'
check "beamtrace stats reads it" 'priv/beamtrace stats "$out/trace" >/dev/null'

echo "${tap_passed} passed, ${tap_failures} failed, ${tap_skipped} skipped"
[ "$tap_failures" -eq 0 ]
