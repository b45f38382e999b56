#!/usr/bin/env bash
# The documentation: what it says exists and works as written. TAP lines
# (see test/run_all.sh). Needs `make` first (the command and the beams).
#
#   - the generated parts (tracepoint, USDT and option tables) are current,
#     and tools/update_docs.sh notices a command or an option the docs lack;
#   - every relative link, anchor and path in every Markdown file resolves
#     inside the repository (test/docs/check_links.py);
#   - the README's install lines are apt-get lines of packages Debian knows,
#     and CI runs them;
#   - CHANGELOG.md has the shape of Keep a Changelog;
#   - the README's worked examples, run as written: the demo's
#     registrations, the p99 commands (examples/riak_p99.sh runs exactly
#     the README's), and the trace/2 call on the same store.
#
# Run alone: TEST_GROUPS=docs bash test/run_all.sh (or bash test/docs/run.sh).
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
out=$root/test/out/docs
rm -rf "$out" && mkdir -p "$out"
TAP_PREFIX="docs: "
. "$root/test/lib/tap.sh"
cd "$root" || exit 1
bt=$root/priv/beamtrace
[ -x "$bt" ] || { not_ok "priv/beamtrace is built (run make first)"; exit 1; }
# Up to a minute per step: a test that hangs fails instead.
limit() { timeout --kill-after=10 "${1}" "${@:2}"; }

# ---- generated parts ----
bash tools/update_docs.sh --check >"$out/check-docs.log" 2>&1
rc=$?
check "the generated tables are current (make check-docs)" '[ "$rc" -eq 0 ]' || show "$out/check-docs.log"
# A command that gains an option, and a new command: the check must fail,
# naming the fix. A wrapper around the real command adds both.
fake=$out/fake-beamtrace
cat >"$fake" <<EOF
#!/bin/sh
case "\$1 \$2" in
"--help ") "$bt" --help | sed '/^  record /a\\  newcmd   a command the docs do not have yet' ;;
"newcmd --help") printf 'usage: beamtrace newcmd DIR\n\nNew.\n\n  -h, --help  show this help\n' ;;
"calls --help") "$bt" calls --help | sed '/^  -h, --help/i\      --new-option N    an option the docs do not have yet' ;;
*) exec "$bt" "\$@" ;;
esac
EOF
chmod +x "$fake"
BEAMTRACE=$fake bash tools/update_docs.sh --check >"$out/fake.log" 2>&1
rc=$?
check "a command without its docs/cli.md section fails the check, naming the fix" \
    '[ "$rc" -ne 0 ] && grep -q "cli:newcmd" "$out/fake.log"' || show "$out/fake.log"
sed -i '/newcmd/d' "$fake"
BEAMTRACE=$fake bash tools/update_docs.sh --check >"$out/fake2.log" 2>&1
rc=$?
check "an option --help has and docs/cli.md lacks fails the check" \
    '[ "$rc" -ne 0 ] && grep -q "docs/cli.md" "$out/fake2.log"' || show "$out/fake2.log"

# ---- links and paths ----
mapfile -t docs < <(find . -name '*.md' -not -path './.git/*' -not -path './_build/*' \
    -not -path './test/out/*' -not -path './bench/out/*' -not -path './beamtrace-traces/*' | sed 's|^\./||' | sort)
for d in "${docs[@]}"; do
    python3 test/docs/check_links.py "$root" "$d" >"$out/links.log" 2>&1
    rc=$?
    check "$d: every link, anchor and path resolves inside the repository" '[ "$rc" -eq 0 ]' ||
        show "$out/links.log"
done
printf '# See `../outside/DESIGN.md`, [a](missing.md) and c_src/core/missing.c.\n' >docs/.bmt-bad-link-test.md
python3 test/docs/check_links.py "$root" docs/.bmt-bad-link-test.md >"$out/bad-links.log" 2>&1
rc=$?
rm -f docs/.bmt-bad-link-test.md
check "the link check finds a path outside, a missing link and a missing file" \
    '[ $rc -ne 0 ] && [ "$(wc -l <"$out/bad-links.log")" -eq 3 ]' || show "$out/bad-links.log"

# ---- install lines ----
for which in build test; do
    line=$(bash tools/install_lines.sh "$which" 2>"$out/lines.err")
    pkgs=$(printf '%s\n' "$line" | tr -d '\\' | tr -s ' \n' '  ' |
        sed 's/.*apt-get install //' | tr ' ' '\n' | grep -v '^-' | grep -v '^$')
    check "the README's $which line: apt-get update, then install -y --no-install-recommends" \
        '[[ "$line" == "apt-get update && apt-get install -y --no-install-recommends "* ]]' ||
        { echo "# $line"; show "$out/lines.err"; }
    if command -v apt-cache >/dev/null; then
        unknown=""
        for p in $pkgs; do apt-cache show --no-all-versions "$p" >/dev/null 2>&1 || unknown="$unknown $p"; done
        check "the README's $which line names packages Debian knows ($(echo $pkgs | wc -w))" '[ -z "$unknown" ]' ||
            echo "#   unknown:$unknown"
    else
        skip "the README's $which line names packages Debian knows" "no apt-cache here"
    fi
done
check ".ci/run installs with the README's two lines (tools/install_lines.sh build, then test)" \
    'grep -q "^ *for which in build test; do" .ci/run && grep -q "tools/install_lines.sh \"\$which\"" .ci/run'

# ---- CHANGELOG ----
check "CHANGELOG.md: Keep a Changelog, Unreleased first, then versions with dates" \
    'first=$(grep -m1 "^## " CHANGELOG.md) && [ "$first" = "## [Unreleased]" ] &&
     ! grep "^## " CHANGELOG.md | tail -n +2 | grep -vqE "^## \[[0-9]+\.[0-9]+\.[0-9]+\] - [0-9]{4}-[0-9]{2}-[0-9]{2}" &&
     grep -q "keepachangelog.com" CHANGELOG.md'

# ---- the README's worked examples ----
# A fenced block of README.md after the marker <!-- NAME -->.
block() { awk -v m="<!-- $1 -->" '$0 == m { want = 1; next } want && /^```/ { if (on) exit; on = 1; next } on { print }' README.md; }

# Process tracing: the names the README shows, registered in the demo's view.
limit 120 bash examples/process_tracing.sh "$out/demo" >"$out/demo.out" 2>&1
names=$(awk '/^\$ beamtrace view beamtrace-traces\//{on=1; next} on && /^```/{exit} on' README.md |
    sed -n 's/.*name = "\([^"]*\)".*/\1/p')
missing=""
for n in $names; do grep -q "name = \"$n\", type = \"register\"" "$out/demo.out" || missing="$missing $n"; done
check "make demo shows the registrations the README shows ($(echo $names | wc -w))" \
    '[ -n "$names" ] && [ -z "$missing" ]' || { echo "#   missing:$missing"; show "$out/demo.out"; }

# The p99 record and calls commands: the README's, as examples/riak_p99.sh
# prints and runs them.
# The node's name is the README's (kv): wait a while for another run's to go.
for _ in $(seq 60); do epmd -names 2>/dev/null | grep -q '^name kv at' || break; sleep 2; done
if epmd -names 2>/dev/null | grep -q '^name kv at'; then
    skip "examples/riak_p99.sh runs the README's p99 commands" "a node named kv already runs here"
else
    limit 180 bash examples/riak_p99.sh "$out/p99" >"$out/p99.out" 2>&1
    rc=$?
    commands() { awk '/^\$ /{on=1} on{print} on && !/\\$/{on=0}'; }
    block example:p99-record | commands >"$out/p99.readme"
    commands <"$out/p99.out" >"$out/p99.ran"
    check "examples/riak_p99.sh runs exactly the README's p99 commands" \
        '[ -s "$out/p99.readme" ] && diff "$out/p99.readme" "$out/p99.ran" >"$out/p99.diff"' ||
        show "$out/p99.diff"
    check "examples/riak_p99.sh: recorded from outside, the breakdown and the slowest calls, the clients' p99" \
        '[ $rc -eq 0 ] && grep -q " 0 discarded" "$out/p99.out" && grep -q "where the time of traced calls went" "$out/p99.out" &&
         grep -qE "^ +[0-9]+ .* kv_store:merge/1$" "$out/p99.out" && grep -q "^the 3 slowest calls" "$out/p99.out" &&
         grep -qE "^clients: [0-9]+ gets in the last 11 s, p99 [0-9.]+ ms$" "$out/p99.out"' || show "$out/p99.out"
fi

# The one call, as the README writes it, on a node running the same store
# with beamtrace on its code path.
call=$(block example:p99-trace | sed -n 's/^(kv@[^)]*)1> //p')
call=${call%.}
mkdir -p "$out/trace2/ebin"
erlc -Werror -o "$out/trace2/ebin" examples/kv/*.erl
(cd "$out/trace2" && KV_DATA_DIR=$out/trace2 limit 120 erl -sname "kvdocs$$" -noshell -pa ebin -pa "$root/ebin" -eval "
    ok = kv:start(),
    R = $call,
    io:format(\"RESULT ~p~n\", [R]),
    {ok, #{dir := Dir}} = R,
    io:format(\"DIR ~s~n\", [Dir]),
    io:format(\"~s~n\", [kv:client_p99(10)]),
    halt().") >"$out/trace2.out" 2>&1
dir=$(sed -n 's/^DIR //p' "$out/trace2.out")
check "the README's beamtrace:trace/2 call, as written, returns {ok, ...} with reason duration" \
    '[ -n "$call" ] && grep -q "^RESULT {ok,#{" "$out/trace2.out" && grep -q "reason => duration" "$out/trace2.out"' ||
    { echo "# call: $call"; show "$out/trace2.out"; }
"$bt" calls "$dir" >"$out/trace2.calls" 2>&1
check "beamtrace calls on its trace: kv_get_fsm:run/2 and kv_store:merge/1 timed" \
    'grep -qE " kv_get_fsm:run/2$" "$out/trace2.calls" && grep -qE " kv_store:merge/1$" "$out/trace2.calls"' ||
    show "$out/trace2.calls"

exit $((tap_failures > 0))
