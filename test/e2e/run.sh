#!/usr/bin/env bash
# End to end: the demo as a user runs it, and a real node's trace read by
# both `beamtrace view` and babeltrace2. TAP lines (see test/run_all.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/e2e
rm -rf "$out" && mkdir -p "$out"
cd "$root"
TAP_PREFIX=""
. "$root/test/lib/tap.sh"

# 1. The demo: the seed's process tracing example.
bash examples/process_tracing.sh "$out/demo" >"$out/demo.out" 2>"$out/demo.err"
rc=$?
check "demo exits 0" '[ "$rc" -eq 0 ]'
for name in sasl_sup sasl_safe_sup alarm_handler release_handler os_mon_sup disksup memsup cpu_sup; do
    check "demo shows $name registered" \
        "grep -qE 'org_erlang_dyntrace:process_register: \\{ cpu_id = [0-9]+ \\}, \\{ pid = \"<0\\.[0-9]+\\.0>\", name = \"$name\", type = \"register\" \\}' '$out/demo.out'"
done
check "demo prints nothing on stderr" '[ ! -s "$out/demo.err" ]' || cat "$out/demo.err"
check "demo trace: beamtrace view equals babeltrace2" \
    'diff <(TZ=UTC priv/beamtrace view "$out/demo") <(TZ=UTC babeltrace2 "$out/demo") >"$out/demo.diff"'

# 2. A workload firing every tracepoint group, read back by both readers.
erl -noshell -pa ebin -eval '
    [Dir] = init:get_plain_arguments(),
    {ok, _} = beamtrace:start(#{dir => Dir}),
    Flags = [procs, ports, running, running_ports, call, return_to, send, '"'"'receive'"'"',
             garbage_collection, {tracer, beamtrace, []}],
    erlang:trace_pattern({lists, seq, 2}, [{'"'"'_'"'"', [], [{return_trace}]}], [local]),
    erlang:trace(new, true, Flags),
    Parent = self(),
    P = spawn(fun() ->
                  register(e2e_worker, self()),
                  L = lists:seq(1, 5000),
                  erlang:garbage_collect(),
                  spawn(fun() -> ok end),
                  os:cmd("true"),
                  Parent ! {done, length(L), "quote\"back\\slash"}
              end),
    receive {done, _, _} -> ok end,
    erlang:trace(all, false, [all]),
    erlang:trace_pattern({lists, seq, 2}, false, [local]),
    {ok, #{events := N, discarded := 0}} = beamtrace:stop(),
    io:format("~p~n", [N]),
    halt().' -extra "$out/all" >"$out/all.count" 2>"$out/all.err"
rc=$?
check "workload node exits 0" '[ "$rc" -eq 0 ]'
TZ=UTC babeltrace2 "$out/all" >"$out/all.bt2" 2>"$out/all.bt2err"
rc=$?
check "babeltrace2 reads the workload trace without warnings" '[ "$rc" -eq 0 ] && [ ! -s "$out/all.bt2err" ]'
check "babeltrace2 event count equals stop/0 events" \
    '[ "$(wc -l <"$out/all.bt2")" -eq "$(cat "$out/all.count")" ]'
check "beamtrace view equals babeltrace2 on the workload trace" \
    'diff <(TZ=UTC priv/beamtrace view "$out/all") "$out/all.bt2" >"$out/all.diff"'
check "beamtrace stats total equals babeltrace2 count" \
    'priv/beamtrace stats "$out/all" --format json | grep -qE "\"events\": *$(cat "$out/all.count")[,}]"'
for tp in process_spawn process_link process_exit process_register process_scheduled port_open \
          port_exit port_link port_scheduled function_call function_return message_send \
          message_receive gc_minor_start gc_minor_end gc_major_start gc_major_end; do
    check "workload trace has $tp" "grep -q 'org_erlang_dyntrace:$tp:' '$out/all.bt2'"
done

# 3. Docs derived from the catalogue are current.
check "README tracepoint table is current (make docs)" 'bash tools/update_docs.sh --check'

[ "$tap_failures" -eq 0 ]
