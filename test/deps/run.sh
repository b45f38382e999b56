#!/usr/bin/env bash
# beamtrace as a dependency, the way a new user adds it: a fresh rebar3
# project (compile, `rebar3 shell`, `rebar3 release` with runtime_tools,
# the release running) and fresh mix projects (`mix run`, `mix release`
# with runtime_tools), with Debian's rebar3 and elixir. The git
# dependencies are exactly the README's lines (after <!-- deps:rebar3 -->
# and <!-- deps:mix -->), only their placeholder URL pointed at a local
# clone; the mix path dependency is the other way mix users add it. Also
# the Hex package's file list: `make priv` builds from those files alone.
# TAP lines (see test/run_all.sh).
#
# Offline and hermetic: the dependency is this working tree committed into a
# scratch git repository (file:// URL) on the branch the README names, HOME
# is a scratch directory (rebar3's and mix's caches), and mix runs rebar3
# from MIX_REBAR3 instead of fetching it from Hex.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/deps
rm -rf "$out" && mkdir -p "$out/home"
export HOME=$out/home
cd "$out"
TAP_PREFIX="deps: "
. "$root/test/lib/tap.sh"
# A command with stdin kept open until it exits (rebar3 shell ends when its
# stdin does, before its --script has run).
with_open_stdin() {
    local fifo=$out/stdin.$$ pid rc
    rm -f "$fifo" && mkfifo "$fifo"
    "$@" <"$fifo" &
    pid=$!
    exec 3>"$fifo"
    wait $pid
    rc=$?
    exec 3>&-
    rm -f "$fifo"
    return $rc
}
version=$(sed -n 's/.*{vsn, *"\([^"]*\)"}.*/\1/p' "$root/src/beamtrace.app.src")

# ---- the README's dependency lines ----
# The fenced line after <!-- deps:KIND --> in README.md.
readme_dep() {
    awk -v m="<!-- deps:$1 -->" '$0 == m { want = 1; next } want && /^```/ { if (on) exit; on = 1; next } on { print }' \
        "$root/README.md"
}
placeholder=https://REPOSITORY/beamtrace.git
rebar3_line=$(readme_dep rebar3)
mix_line=$(readme_dep mix)
check "the README has a rebar3 line and a mix line, each naming $placeholder" \
    '[ "$(printf "%s\n" "$rebar3_line" | grep -c .)" = 1 ] && [ "$(printf "%s\n" "$mix_line" | grep -c .)" = 1 ] &&
     [[ "$rebar3_line" == *"\"$placeholder\""* ]] && [[ "$mix_line" == *"\"$placeholder\""* ]]' ||
    printf '#   %s\n' "$rebar3_line" "$mix_line"
# The ref they name: a branch, which travels with every clone of the
# repository (a tag need not). It must be one of this repository's.
branch=$(printf '%s\n' "$rebar3_line" | sed -n 's/.*{branch, *"\([^"]*\)"}.*/\1/p')
mix_branch=$(printf '%s\n' "$mix_line" | sed -n 's/.*branch: *"\([^"]*\)".*/\1/p')
check "both name the same branch ($branch), and this repository has it" \
    '[ -n "$branch" ] && [ "$branch" = "$mix_branch" ] &&
     { ! git -C "$root" rev-parse --git-dir >/dev/null 2>&1 ||
       git -C "$root" rev-parse --verify -q "refs/heads/$branch" >/dev/null ||
       git -C "$root" rev-parse --verify -q "refs/remotes/origin/$branch" >/dev/null; }'
branch=${branch:-main}

# ---- the dependency: this working tree as a git repository ----
src=$out/beamtrace
bash "$root/tools/copy_tree.sh" "$src"
(cd "$src" && git init -q -b "$branch" && git add -A &&
    git -c user.name=bmt -c user.email=bmt@localhost commit -qm "beamtrace under test") ||
    { echo "not ok - deps: scratch git repository of the working tree"; exit 1; }
url=file://$src

# What the node runs in every project: record one registration, and say
# where the dyntrace module comes from (OTP's runtime_tools, never
# beamtrace's ebin). The trace directory is named by OS pid and time:
# unique_integer/1 repeats across fresh VMs, and start/1 rightly refuses a
# directory that already holds a trace.
probe_erl='{ok, S} = beamtrace:start(#{dir => filename:join(os:getenv("BMT_PROBE_DIR"), os:getpid() ++ "_" ++ integer_to_list(erlang:system_time())), events => ["org_erlang_dyntrace:process_register"]}),
    erlang:trace(new, true, [procs, {tracer, beamtrace, []}]),
    Parent = self(),
    Child = spawn(fun() -> register(bmt_deps_probe, self()), Parent ! {registered, self()} end),
    receive {registered, Child} -> ok after 30000 -> exit(probe_never_registered) end,
    erlang:trace(new, false, [procs]),
    {ok, #{events := N}} = beamtrace:stop(S),
    R = lists:flatten(io_lib:format("RESULT events=~p dyntrace=~s", [N, code:which(dyntrace)])),
    io:format("~s~n", [R]),
    R'
export BMT_PROBE_DIR=$out/traces
mkdir -p "$BMT_PROBE_DIR"
# At least one event, and dyntrace from runtime_tools (or absent). A
# release's eval prints the expression's value (the line quoted), and the
# shell's prompt may come first.
probe_ok() {
    grep -qE '(^|> )"?RESULT events=[1-9][0-9]* dyntrace=(/[^ ]*/runtime_tools[^ ]*/ebin/dyntrace.beam|non_existing)"?$' "$1"
}

# ---- rebar3 ----
if ! command -v rebar3 >/dev/null; then
    for c in compile shell release release_runs; do skip "rebar3 $c" "rebar3 not installed (apt-get install rebar3)"; done
else
    echo "# $(rebar3 version 2>/dev/null)"
    rebar3 new app name=bmt_dep_app >"$out/rebar3-new.log" 2>&1
    app=$out/bmt_dep_app
    node=bmt_deps_$$
    mkdir -p "$app/config"
    printf -- '-sname %s\n-setcookie bmt_deps_test\n' "$node" >"$app/config/vm.args"
    cat >"$app/rebar.config" <<EOF
{erl_opts, [debug_info]}.
${rebar3_line//$placeholder/$url}
{relx, [{release, {bmt_dep_app, "0.1.0"}, [bmt_dep_app, runtime_tools, beamtrace]},
        {vm_args, "config/vm.args"}, {dev_mode, false}, {include_erts, false}]}.
EOF
    lib=$app/_build/default/lib/beamtrace
    (cd "$app" && rebar3 compile) >"$out/rebar3-compile.log" 2>&1
    rc=$?
    check "rebar3 compile builds priv/ (NIF, command, dyntrace compat) and the beams" \
        '[ "$rc" -eq 0 ] && [ -f "$lib/priv/beamtrace_nif.so" ] && [ -x "$lib/priv/beamtrace" ] &&
         [ -f "$lib/priv/compat/dyntrace.beam" ] && [ -f "$lib/ebin/beamtrace.beam" ] &&
         [ -f "$lib/ebin/beamtrace_tracing.beam" ]' || show "$out/rebar3-compile.log"
    check "no dyntrace module in any ebin/ of the project" \
        '[ -z "$(find "$app/_build" -path "*/ebin/dyntrace.beam")" ]'
    check "priv/beamtrace --version is the .app.src vsn" \
        '[ "$("$lib/priv/beamtrace" --version)" = "beamtrace $version" ]'
    printf -- '-module(bmt_deps_probe).\n-export([main/1]).\nmain(_) ->\n    %s,\n    halt(0).\n' \
        "$probe_erl" >"$out/probe.escript"
    (cd "$app" && with_open_stdin timeout 300 rebar3 shell --script "$out/probe.escript") \
        >"$out/rebar3-shell.log" 2>&1
    check "rebar3 shell: beamtrace records from the project's shell" 'probe_ok "$out/rebar3-shell.log"' ||
        show "$out/rebar3-shell.log"
    (cd "$app" && rebar3 release) >"$out/rebar3-release.log" 2>&1
    rc=$?
    check "rebar3 release with runtime_tools assembles (no duplicated dyntrace)" \
        '[ "$rc" -eq 0 ] && ! grep -q "Duplicated modules" "$out/rebar3-release.log"' ||
        show "$out/rebar3-release.log"
    rel=$app/_build/default/rel/bmt_dep_app/bin/bmt_dep_app
    rel_log=$app/_build/default/rel/bmt_dep_app/log
    epmd_before=$(pgrep -x epmd)
    if [ -x "$rel" ] && "$rel" daemon >"$out/rel-daemon.log" 2>&1; then
        # Ready when relx's own eval answers (ping can answer before the
        # boot script has finished).
        for _ in $(seq 120); do
            [ "$("$rel" eval 'ok.' 2>/dev/null)" = ok ] && break
            sleep 0.5
        done
        rel_eval() { "$rel" eval "$1" 2>&1; echo "# eval exit code $?"; }
        rel_eval "$probe_erl." >"$out/rel-eval.log"
        # relx's eval drops erl_call's output when erl_call fails: a probe
        # that never reported (no RESULT line at all) is a transport
        # failure, tried once more and said so; a RESULT that is wrong is not.
        if ! grep -q 'RESULT' "$out/rel-eval.log"; then
            echo "# no RESULT: trying the eval once more" >>"$out/rel-eval.log"
            sleep 2
            rel_eval "$probe_erl." >>"$out/rel-eval.log"
        fi
        rel_eval 'code:priv_dir(beamtrace).' >>"$out/rel-eval.log"
        "$rel" stop >>"$out/rel-daemon.log" 2>&1
        if ! check "the release runs: beamtrace records in it, its NIF from the release's own lib/" \
            'probe_ok "$out/rel-eval.log" && grep -qx "\"$app/_build/default/rel/bmt_dep_app/lib/beamtrace-$version/priv\"" "$out/rel-eval.log"'; then
            show "$out/rel-eval.log"
            show "$out/rel-daemon.log"
            for f in "$rel_log"/erlang.log.* "$rel_log"/run_erl.log; do
                [ -f "$f" ] && echo "# $f:" && show "$f" 40
            done
        fi
        grep -q '^# no RESULT' "$out/rel-eval.log" && echo "# the release's first eval did not answer; the second did or failed above"
    else
        not_ok "the release runs: bin/bmt_dep_app daemon"
        show "$out/rel-daemon.log"
    fi
    # The release carries the command, and it finds the beams it ships
    # (ebin/ beside its priv/): it gets as far as looking for the node.
    rel_cmd=$app/_build/default/rel/bmt_dep_app/lib/beamtrace-$version/priv/beamtrace
    (cd "$out" && BEAMTRACE_COOKIE=bmt_deps_test "$rel_cmd" record --node bmt_deps_no_such_node --events procs \
        --duration 1s -o rel-record) \
        >"$out/rel-record.log" 2>&1
    rc=$?
    check "the release's priv/beamtrace finds its own ebin/ and priv/ to ship (record)" \
        '[ "$rc" -eq 1 ] && [ -x "$rel_cmd" ] && ! grep -q "cannot find beamtrace" "$out/rel-record.log" &&
         grep -q "bmt_deps_no_such_node" "$out/rel-record.log"' || show "$out/rel-record.log"
    # epmd, if the release started it.
    [ -z "$epmd_before" ] && epmd -kill >/dev/null 2>&1
fi

# ---- mix ----
if ! command -v mix >/dev/null; then
    for c in path git run release; do skip "mix $c" "mix not installed (apt-get install elixir)"; done
elif ! command -v rebar3 >/dev/null; then
    for c in path git run release; do skip "mix $c" "rebar3 not installed (mix builds beamtrace with rebar3)"; done
else
    export MIX_REBAR3
    MIX_REBAR3=$(command -v rebar3)
    echo "# $(elixir --version 2>/dev/null | tail -1)"
    cat >"$out/probe.exs" <<'EOF'
dir = Path.join(System.get_env("BMT_PROBE_DIR"), "mix_#{System.unique_integer([:positive])}_#{System.os_time()}")
{:ok, s} = :beamtrace.start(%{dir: String.to_charlist(dir), events: [~c"org_erlang_dyntrace:process_register"]})
:erlang.trace(:new, true, [:procs, {:tracer, :beamtrace, []}])
parent = self()
child = spawn(fn -> Process.register(self(), :bmt_deps_probe); send(parent, {:registered, self()}) end)
receive do
  {:registered, ^child} -> :ok
after
  30_000 -> exit(:probe_never_registered)
end
:erlang.trace(:new, false, [:procs])
{:ok, %{events: n}} = :beamtrace.stop(s)
IO.puts("RESULT events=#{n} dyntrace=#{:code.which(:dyntrace)}")
EOF
    for kind in path git; do
        proj=$out/bmt_mix_$kind
        (cd "$out" && mix new "bmt_mix_$kind" >/dev/null 2>&1)
        case $kind in
        path) dep="{:beamtrace, path: \"$src\"}" ;;
        git) dep=${mix_line//$placeholder/$url} ;;
        esac
        sed -i "s|# {:dep_from_hexpm, \"~> 0.3.0\"}|$dep|; s|extra_applications: \[:logger\]|extra_applications: [:logger, :runtime_tools]|" \
            "$proj/mix.exs"
        (cd "$proj" && mix deps.get && mix compile) >"$out/mix-$kind.log" 2>&1
        rc=$?
        check "mix $kind dependency: compiles, priv/ built" \
            '[ "$rc" -eq 0 ] && [ -f "$proj/_build/dev/lib/beamtrace/priv/beamtrace_nif.so" ] &&
             [ -z "$(find "$proj/_build" -path "*/ebin/dyntrace.beam")" ]' || show "$out/mix-$kind.log"
        (cd "$proj" && mix run "$out/probe.exs") >"$out/mix-$kind-run.log" 2>&1
        check "mix $kind dependency: mix run records" 'probe_ok "$out/mix-$kind-run.log"' ||
            show "$out/mix-$kind-run.log"
    done
    proj=$out/bmt_mix_git
    (cd "$proj" && mix release --overwrite) >"$out/mix-release.log" 2>&1
    rc=$?
    check "mix release with runtime_tools assembles" '[ "$rc" -eq 0 ]' || show "$out/mix-release.log"
    "$proj/_build/dev/rel/bmt_mix_git/bin/bmt_mix_git" eval "$(cat "$out/probe.exs")" >"$out/mix-release-eval.log" 2>&1
    check "mix release runs: beamtrace records in it" 'probe_ok "$out/mix-release-eval.log"' ||
        show "$out/mix-release-eval.log"
fi

# ---- the Hex package ----
# The files .app.src lists for the package (rebar3_hex reads them), alone,
# must be enough for `make priv`.
files=$(erl -noshell -eval '{ok, [{application, _, P}]} = file:consult(hd(init:get_plain_arguments())),
    [io:format("~s~n", [F]) || F <- proplists:get_value(files, P)], halt().' -extra "$root/src/beamtrace.app.src")
pkg=$out/hex-package
mkdir -p "$pkg"
# shellcheck disable=SC2086
(cd "$src" && cp -r --parents $files "$pkg")
check "Hex metadata: description, licenses [\"Apache-2.0\"], LICENSE file" \
    'grep -q "{description, \"" "$root/src/beamtrace.app.src" &&
     grep -q "{licenses, \[\"Apache-2.0\"\]}" "$root/src/beamtrace.app.src" &&
     grep -q "Apache License" "$root/LICENSE" && grep -q "Version 2.0" "$root/LICENSE"'
make -C "$pkg" priv >"$out/hex-make.log" 2>&1
rc=$?
check "make priv builds from the Hex package's files alone" '[ "$rc" -eq 0 ] && [ -f "$pkg/priv/beamtrace_nif.so" ]' ||
    show "$out/hex-make.log"

exit $((tap_failures > 0))
