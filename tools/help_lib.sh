# shellcheck shell=bash
# Reading the command's own help, for the generators that derive docs,
# man pages and the bash completion from it (tools/update_docs.sh,
# tools/gen_man.sh, tools/gen_completion.sh). Sourced, not run.
#
#   help_commands BIN        each subcommand of `BIN --help`: NAME<TAB>SUMMARY
#   help_parts BIN CMD       `BIN CMD --help` as tools/help_options.awk prints it
#
# The subcommand list is the "commands:" block of `beamtrace --help`, so a
# new subcommand reaches every generated file without being listed here.

help_tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

help_commands() {
    "$1" --help | awk '
        /^[Cc]ommands:/ { inside = 1; next }
        inside && /^  [a-z]/ {
            name = $1
            summary = $0
            sub(/^  [a-z]+ +/, "", summary)
            print name "\t" summary
            next
        }
        inside && /^[^ ]/ { exit }
        inside && /^$/ { exit }'
}

help_parts() {
    local out rc
    out=$("$1" "$2" --help) || rc=$?
    if [ "${rc:-0}" -ne 0 ] || [ -z "$out" ]; then
        echo "help_lib: '$1 $2 --help' failed (exit ${rc:-0})" >&2
        return 1
    fi
    printf '%s\n' "$out" | awk -f "$help_tools/help_options.awk"
}
