#!/usr/bin/env bash
# `make install` as a user and a packager run it: into a scratch DESTDIR,
# with the default PREFIX (/usr/local) and with PREFIX=/usr. Then the
# installed command, run from there: it views a trace, records a real node
# from outside with the installed beams and NIF library, and a node uses
# the installed Erlang application; the man pages render with `man -l`, one
# per command; the bash completion offers every command and every option
# each command's --help lists; `make uninstall` leaves nothing. TAP lines
# (see test/run_all.sh). Needs `make` first.
#
# Run alone: TEST_GROUPS=install bash test/run_all.sh (or bash test/install/run.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/install
rm -rf "$out" && mkdir -p "$out"
TAP_PREFIX="install: "
. "$root/test/lib/tap.sh"
. "$root/tools/help_lib.sh"
cd "$root" || exit 1
limit() { timeout --kill-after=10 "${1}" "${@:2}"; }
version=$(sed -n 's/.*{vsn, *"\([^"]*\)"}.*/\1/p' src/beamtrace.app.src)
mapfile -t commands < <(help_commands priv/beamtrace | cut -f1)

# ---- make install, default PREFIX ----
dest=$out/dest
pre=$dest/usr/local
make --no-print-directory install DESTDIR="$dest" >"$out/install.log" 2>&1
rc=$?
check "make install DESTDIR=... puts everything under DESTDIR/usr/local" \
    '[ "$rc" -eq 0 ] && [ -z "$(find "$dest" -mindepth 1 -maxdepth 1 ! -name usr)" ] &&
     [ -z "$(find "$dest/usr" -mindepth 1 -maxdepth 1 ! -name local)" ]' || show "$out/install.log"
check "the command on PATH: bin/beamtrace, a relative link to lib/beamtrace/priv/beamtrace" \
    '[ -L "$pre/bin/beamtrace" ] && [ "$(readlink "$pre/bin/beamtrace")" = ../lib/beamtrace/priv/beamtrace ] &&
     [ -x "$pre/lib/beamtrace/priv/beamtrace" ]'
check "the Erlang application: every beam, the .app, the NIF, the compat module" \
    '[ "$(ls "$pre/lib/beamtrace/ebin" | sort)" = "$(ls ebin | sort)" ] &&
     [ -f "$pre/lib/beamtrace/priv/beamtrace_nif.so" ] && [ -f "$pre/lib/beamtrace/priv/dyntrace_nif.so" ] &&
     [ -f "$pre/lib/beamtrace/priv/compat/dyntrace.beam" ] &&
     { [ ! -f priv/beamtrace_lttng.so ] || [ -f "$pre/lib/beamtrace/priv/beamtrace_lttng.so" ]; }'
check "bash completion, bpftrace scripts and docs where Debian looks for them" \
    '[ -f "$pre/share/bash-completion/completions/beamtrace" ] &&
     [ -x "$pre/share/beamtrace/scripts/beamtrace-bpftrace" ] && [ -f "$pre/share/beamtrace/scripts/slow-calls.bt" ] &&
     [ -f "$pre/share/doc/beamtrace/README.md" ] && [ -f "$pre/share/doc/beamtrace/docs/cli.md" ]'

installed=$pre/bin/beamtrace
check "the installed command: --version is the .app.src vsn ($version)" \
    '[ "$("$installed" --version)" = "beamtrace $version" ]'

# A node using the installed application records a trace; the installed
# command views it as the tree's does.
limit 60 erl -noshell -pa "$pre/lib/beamtrace/ebin" -eval '
    [Dir] = init:get_plain_arguments(),
    Nif = filename:join(code:priv_dir(beamtrace), "beamtrace_nif.so"),
    {ok, S} = beamtrace:start(#{dir => Dir, events => ["org_erlang_dyntrace:process_spawn"]}),
    erlang:trace(self(), true, [procs, {tracer, beamtrace, []}]),
    [spawn(fun() -> ok end) || _ <- lists:seq(1, 10)],
    erlang:trace(self(), false, [procs]),
    {ok, #{events := N}} = beamtrace:stop(S),
    io:format("events ~p nif ~s~n", [N, Nif]), halt().' -extra "$out/trace" >"$out/node.log" 2>&1
check "a node with -pa the installed ebin/ records with the installed NIF (10 spawns)" \
    'grep -qx "events 10 nif $pre/lib/beamtrace/priv/beamtrace_nif.so" "$out/node.log"' || show "$out/node.log"
"$installed" view "$out/trace" >"$out/view.installed" 2>&1
priv/beamtrace view "$out/trace" >"$out/view.tree" 2>&1
check "the installed command views the trace as the tree's does" \
    '[ "$(grep -c process_spawn "$out/view.installed")" = 10 ] && cmp -s "$out/view.installed" "$out/view.tree"' ||
    show "$out/view.installed"

# record from outside, with the installed command and nothing else: it
# finds lib/beamtrace/ebin and priv/ from its own path (the tree's are out
# of its reach: another directory, no BEAMTRACE_ROOT).
node=bmtinst$$
# (timeout itself in the background, not the limit function's subshell: its
# pid is the one to stop, and it passes the signal on to the node.)
timeout --kill-after=10 120 erl -sname "$node" -noinput \
    -eval 'register(bmt_install_target, self()), receive stop -> ok end' >"$out/target.log" 2>&1 &
target=$!
for _ in $(seq 300); do epmd -names 2>/dev/null | grep -q "^name $node at" && break; sleep 0.2; done # up to 60 s: a loaded machine boots a VM slowly
(cd "$out" && unset BEAMTRACE_ROOT && limit 120 "$installed" record --node "$node" --events procs \
    --duration 2s -o rec) >"$out/record.log" 2>&1
rc=$?
check "the installed command records a real node from outside (ships the installed beams and NIF)" \
    '[ "$rc" -eq 0 ] && grep -q "^shipped .* and the NIF library" "$out/record.log" &&
     grep -q "no beamtrace flag, pattern or session left" "$out/record.log" && [ -f "$out/rec/metadata" ]' ||
    show "$out/record.log"
"$installed" stats "$out/rec" >"$out/record.stats" 2>&1
rc=$?
check "its trace reads back (beamtrace stats)" '[ "$rc" -eq 0 ] && grep -q "discarded" "$out/record.stats"' ||
    show "$out/record.stats"
kill "$target" 2>/dev/null
wait "$target" 2>/dev/null

# ---- man pages ----
man1=$pre/share/man/man1
if ! command -v help2man >/dev/null; then
    skip "man pages installed and rendered" "help2man is not installed (apt-get install help2man)"
elif ! command -v man >/dev/null; then
    skip "man pages render with man -l" "man is not installed (apt-get install man-db)"
else
    missing=""
    for c in "${commands[@]}"; do [ -f "$man1/beamtrace-$c.1" ] || missing="$missing beamtrace-$c.1"; done
    check "a man page for beamtrace and for each of its ${#commands[@]} commands" \
        '[ -f "$man1/beamtrace.1" ] && [ -z "$missing" ]' || echo "#   missing:$missing"
    bad=""
    for page in "$man1"/beamtrace*.1; do
        name=$(basename "$page" .1)
        MANWIDTH=100 man -l "$page" >"$out/$name.txt" 2>"$out/$name.err" </dev/null
        # NAME, a SYNOPSIS from the usage line, the options, SEE ALSO; no
        # warning from groff or man.
        if [ -s "$out/$name.err" ] || ! grep -q "^NAME" "$out/$name.txt" ||
            ! grep -q "^SYNOPSIS" "$out/$name.txt" || ! grep -q "^SEE ALSO" "$out/$name.txt" ||
            ! grep -q -- "--help" "$out/$name.txt"; then
            bad="$bad $name"
        fi
    done
    check "man -l renders every page: NAME, SYNOPSIS, options, SEE ALSO, no warning" '[ -z "$bad" ]' ||
        { echo "#   bad:$bad"; for b in $bad; do show "$out/$b.err" 5; done; }
    missing=""
    for o in $(help_parts priv/beamtrace calls | awk -F '\t' '$1 == "option" { print $3 }'); do
        grep -q -- "$o" "$out/beamtrace-calls.txt" || missing="$missing $o"
    done
    check "beamtrace-calls(1) says every option 'beamtrace calls --help' lists" '[ -z "$missing" ]' ||
        echo "#   missing:$missing"
    check "beamtrace-record(1) has its ENVIRONMENT section (docs/man/beamtrace-record.h2m)" \
        'grep -q "^ENVIRONMENT" "$out/beamtrace-record.txt" && grep -q "BEAMTRACE_ROOT" "$out/beamtrace-record.txt"'
fi

# ---- bash completion ----
# What the completion offers for a command line, as bash would ask it.
complete_words() { # WORDS... (the last one is being completed)
    bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
        compopt() { :; }   # outside a completion, compopt has nothing to act on
        _beamtrace
        printf "%s\n" "${COMPREPLY[@]}"' _ "$pre/share/bash-completion/completions/beamtrace" "$@"
}
check "completion: 'beamtrace <TAB>' offers every command" \
    '[ "$(complete_words beamtrace "" | grep -v "^-" | sort)" = "$(printf "%s\n" "${commands[@]}" | sort)" ]'
check "completion: 'beamtrace cal<TAB>' is calls, 'beamtrace ca<TAB>' offers calls and captures" \
    '[ "$(complete_words beamtrace cal)" = calls ] && [ "$(complete_words beamtrace ca | tr " " "\n" | sort | tr "\n" " ")" = "calls captures " ]'
missing=""
for c in "${commands[@]}"; do
    offered=$(complete_words beamtrace "$c" -)
    for o in $(help_parts priv/beamtrace "$c" | awk -F '\t' '$1 == "option" { print $3; if ($2 != "") print $2 }'); do
        printf '%s\n' "$offered" | grep -qxF -- "$o" || missing="$missing $c:$o"
    done
done
check "completion: 'beamtrace CMD -<TAB>' offers every option of every command's --help" '[ -z "$missing" ]' ||
    echo "#   missing:$missing"
check "completion: values of an option (calls --format: json text; sched --from: first last; flame --unit: ns us)" \
    '[ "$(complete_words beamtrace calls --format "" | sort | tr "\n" " ")" = "json text " ] &&
     [ "$(complete_words beamtrace sched --from "" | sort | tr "\n" " ")" = "first last " ] &&
     [ "$(complete_words beamtrace flame --unit "" | sort | tr "\n" " ")" = "ns us " ]'
mkdir -p "$out/comp/tracedir" && touch "$out/comp/tracefile"
check "completion: a trace DIR completes directories; -o FILE completes files" \
    '[ "$(cd "$out/comp" && complete_words beamtrace calls tra)" = tracedir ] &&
     [ "$(cd "$out/comp" && complete_words beamtrace flame -o tracef)" = tracefile ]'

# ---- uninstall ----
make --no-print-directory uninstall DESTDIR="$dest" >"$out/uninstall.log" 2>&1
rc=$?
check "make uninstall removes every file make install put there" \
    '[ "$rc" -eq 0 ] && [ -z "$(find "$dest" ! -type d)" ]' ||
    { show "$out/uninstall.log"; find "$dest" ! -type d | sed "s/^/#   left: /"; }

# ---- a packager's install: PREFIX=/usr ----
make --no-print-directory install DESTDIR="$out/pkg" PREFIX=/usr >"$out/install-usr.log" 2>&1
rc=$?
check "make install PREFIX=/usr DESTDIR=...: /usr/bin, /usr/lib/beamtrace, /usr/share/man/man1" \
    '[ "$rc" -eq 0 ] && [ "$(readlink "$out/pkg/usr/bin/beamtrace")" = ../lib/beamtrace/priv/beamtrace ] &&
     [ -f "$out/pkg/usr/lib/beamtrace/ebin/beamtrace.app" ] &&
     { ! command -v help2man >/dev/null || [ -f "$out/pkg/usr/share/man/man1/beamtrace.1" ]; } &&
     [ "$("$out/pkg/usr/bin/beamtrace" --version)" = "beamtrace $version" ]' || show "$out/install-usr.log"

# ---- make install straight from a clean tree (no make before it) ----
bash tools/copy_tree.sh "$out/clean"
make --no-print-directory -C "$out/clean" install DESTDIR="$out/clean-dest" >"$out/install-clean.log" 2>&1
rc=$?
check "make install in a clean tree builds and installs everything (the LTTng provider where it builds)" \
    '[ "$rc" -eq 0 ] && [ -x "$out/clean-dest/usr/local/bin/beamtrace" ] &&
     [ -f "$out/clean-dest/usr/local/lib/beamtrace/priv/beamtrace_nif.so" ] &&
     { [ ! -f "$out/clean/priv/beamtrace_lttng.so" ] || [ -f "$out/clean-dest/usr/local/lib/beamtrace/priv/beamtrace_lttng.so" ]; }' ||
    show "$out/install-clean.log"

# ---- a user's install, as the README writes it: PREFIX=$HOME/.local ----
(export HOME=$out/home && mkdir -p "$HOME" && PREFIX=$HOME/.local make --no-print-directory install) \
    >"$out/install-home.log" 2>&1
rc=$?
check "PREFIX=\$HOME/.local make install: the command in ~/.local/bin, its completion in ~/.local/share" \
    '[ "$rc" -eq 0 ] && [ "$("$out/home/.local/bin/beamtrace" --version)" = "beamtrace $version" ] &&
     [ -f "$out/home/.local/share/bash-completion/completions/beamtrace" ]' || show "$out/install-home.log"

exit $((tap_failures > 0))
