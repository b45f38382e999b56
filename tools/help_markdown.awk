# Turns one command's help, as tools/help_options.awk prints it, into the
# Markdown of its section in docs/cli.md: the usage lines as a code block,
# the description paragraphs, the options as a table, and what follows the
# options (exit status). Text is escaped for CommonMark/GitHub: the help's
# `code` spans stay code; everything else that Markdown would read as markup
# (*, _, [, ], <, >, \) is escaped, and | in table cells.
#
# Usage: awk -F '\t' -f tools/help_markdown.awk PARTS

# Escapes TEXT for Markdown; in_table also escapes | inside code spans
# (GitHub splits table cells on | even there).
function md(text, in_table,    n, parts, i, out, s) {
    n = split(text, parts, "`")
    out = ""
    for (i = 1; i <= n; i++) {
        s = parts[i]
        if (i % 2 == 1 || i == n) {
            # Outside a code span (an unpaired last backtick is text too).
            gsub(/\\/, "\\\\", s)
            gsub(/\*/, "\\*", s)
            gsub(/_/, "\\_", s)
            gsub(/\[/, "\\[", s)
            gsub(/\]/, "\\]", s)
            gsub(/</, "\\&lt;", s)
            gsub(/>/, "\\&gt;", s)
            gsub(/\|/, "\\|", s)
            if (i > 1 && i == n && i % 2 == 0)
                s = "\\`" s
        } else if (in_table) {
            gsub(/\|/, "\\|", s)
        }
        if (i > 1 && (i % 2 == 0 && i < n || i % 2 == 1))
            out = out "`"
        out = out s
    }
    return out
}

function code(text, in_table) {
    if (in_table)
        gsub(/\|/, "\\|", text)
    return "`" text "`"
}

$1 == "usage" { usage[++n_usage] = $2; next }
$1 == "text" { text[++n_text] = $2; next }
$1 == "group" { group = $2; next }
$1 == "option" {
    spec = ($2 != "" ? code($2, 1) ", " : "") code($3 ($4 == "" ? "" : substr($4, 1, 1) == "[" ? $4 : " " $4), 1)
    opt[++n_opt] = "| " spec " | " md($5, 1) " |"
    opt_group[n_opt] = group
    next
}
$1 == "tail" { tail[++n_tail] = $2; next }

END {
    print "```"
    for (i = 1; i <= n_usage; i++)
        print usage[i]
    print "```"
    for (i = 1; i <= n_text; i++) {
        print ""
        print md(text[i], 0)
    }
    # One table per group of options; a group other than the first is
    # titled ("Scope options").
    for (i = 1; i <= n_opt; i++) {
        if (i == 1 || opt_group[i] != opt_group[i - 1]) {
            print ""
            if (i > 1)
                print "*" md(opt_group[i], 0) "*\n"
            print "| option | meaning |"
            print "|---|---|"
        }
        print opt[i]
    }
    for (i = 1; i <= n_tail; i++) {
        print ""
        print md(tail[i], 0)
    }
}
