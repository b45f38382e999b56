# Reads one `beamtrace <command> --help` text and prints its parts, one per
# line, tab-separated, for the generators of docs/cli.md
# (tools/update_docs.sh) and of the bash completion
# (tools/gen_completion.sh):
#
#   usage<TAB>TEXT            each usage line, without "usage: "
#   text<TAB>TEXT             a paragraph of the description, joined
#   option<TAB>SHORT<TAB>LONG<TAB>ARG<TAB>HELP
#                             an option: SHORT is "-o" or "", LONG "--output",
#                             ARG "FILE", "[=DIR]" or "", HELP its text joined
#   group<TAB>TITLE           a titled group of options begins ("Scope options")
#   tail<TAB>TEXT             a paragraph after the options (exit status, ...)
#
# The grammar: a usage line ("usage:" or "Usage:") and its continuations
# (indented "beamtrace ..." or GNU's "  or:  beamtrace ..."), paragraphs at
# column 0, option lines indented by spaces, "-x, --long ARG" or "--long
# ARG" then two or more spaces and the help (or the help on the next lines
# when the option fills the column), whose continuation lines are indented
# further; options may come under titles at column 0 ("Options:", "Scope
# options:"), as help2man reads them.
#
# Usage: awk -f tools/help_options.awk HELP_TEXT   (POSIX awk: mawk, gawk)

function flush(    kind) {
    if (para != "") {
        kind = seen_option ? "tail" : "text"
        print kind "\t" para
        para = ""
    }
    if (opt_long != "") {
        print "option\t" opt_short "\t" opt_long "\t" opt_arg "\t" opt_help
        opt_long = ""
    }
}

function add(s, text) {
    return s == "" ? text : s " " text
}

BEGIN { in_usage = 0; seen_option = 0; para = ""; opt_long = "" }

# The usage line and its indented continuations ("       beamtrace record ...").
NR == 1 && /^[Uu]sage: / {
    print "usage\t" substr($0, 8)
    in_usage = 1
    next
}
in_usage && /^ +(or: +)?beamtrace / {
    line = $0
    sub(/^ +(or: +)?/, "", line)
    print "usage\t" line
    next
}
{ in_usage = 0 }

/^[ \t]*$/ { flush(); next }

# A group title: "Options:", "Scope options:".
/^[A-Z][A-Za-z ]*:$/ {
    flush()
    title = substr($0, 1, length($0) - 1)
    print "group\t" title
    next
}

# An option line: indent, [-x, ]--long[ ARG|[=ARG]], two or more spaces, help
# (or no help, when the option spec fills the column).
/^ +(-[A-Za-z], )?--[a-z][a-z0-9-]*/ {
    flush()
    line = $0
    sub(/^ +/, "", line)
    opt_short = ""
    if (line ~ /^-[A-Za-z], /) {
        opt_short = substr(line, 1, 2)
        line = substr(line, 5)
    }
    match(line, /^--[a-z][a-z0-9-]*/)
    opt_long = substr(line, 1, RLENGTH)
    line = substr(line, RLENGTH + 1)
    opt_arg = ""
    if (line ~ /^\[=[^] ]*\]/) {
        match(line, /^\[=[^] ]*\]/)
        opt_arg = substr(line, 1, RLENGTH)
        line = substr(line, RLENGTH + 1)
    } else if (line ~ /^ [^ ]/) {
        match(line, /^ [^ ]+/)
        opt_arg = substr(line, 2, RLENGTH - 1)
        line = substr(line, RLENGTH + 1)
    }
    sub(/^ +/, "", line)
    opt_help = line
    seen_option = 1
    next
}

# A continuation of the option's help.
opt_long != "" && /^    / {
    line = $0
    sub(/^ +/, "", line)
    opt_help = add(opt_help, line)
    next
}

# Paragraph text (column 0, or indented outside an option).
{
    if (opt_long != "")
        flush()
    line = $0
    sub(/^ +/, "", line)
    para = add(para, line)
}

END { flush() }
