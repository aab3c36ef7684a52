# tests/doc_extract.awk: the commands that README and doc/*.md show, for
# tests/doc_commands.sh. Input: the doc files; output, one record a line,
# tab-separated: FILE, LINE, KIND, TEXT, where KIND is
#   c  a command: an indented line (at its block's indentation) starting,
#      after optional VAR=value assignments, with ./freescale, with mpirun,
#      srun or sbatch and an option (quoted output such as mpirun's own
#      "mpirun detected ..." is not a command), or with scripts/ or bench/;
#      continuation lines (trailing backslash)
#      joined to it with one space
#   u  a usage line: such a line with placeholders (FILE.in, OUT.h5, P, a
#      [bracketed] option, a|b alternatives, ...), or a row of a usage table
#      (the command, three spaces, its description); shown, never run
#   o  a line the doc quotes as the output of the command before it: an
#      indented line of the same block region, after the command, at most
#      two columns deeper, not a comment (#) and not "..."; or such a line
#      of the next region when the prose between begins "prints "
# Prose paragraphs (their first line indented less than 4 columns) end a
# region; ``` fences are skipped.
function indent(s) { match(s, /^ */); return RLENGTH }
function is_usage(t,    n, w, i, k) {
    if (t ~ /[^ ]   +[^ #]/) return 1                 # a usage table's row
    n = split(t, w, / +/); k = 1
    while (k <= n && w[k] ~ /^[A-Za-z_][A-Za-z0-9_]*=/) k++   # VAR=value
    for (i = k; i <= n; i++) {
        if (w[i] ~ /^#/) break
        if (w[i] ~ /^\[|\]$|\||^\.\.\.$/) return 1
        if (w[i] ~ /^[A-Z][A-Z0-9_]*(\.[a-z0-9]+)?,?$/) return 1
    }
    return 0
}
function emit(kind, line, text) { print FILENAME "\t" line "\t" kind "\t" text }
function done_cmd() {
    emit(is_usage(cmd) ? "u" : "c", cline, cmd); cmd = ""; after = 1
}
FNR == 1 { fence = 0; cont = 0; prose = 1; region = 0; after = 0; newpara = 1 }
/^```/ { fence = !fence; next }
fence { next }
/^[ \t]*$/ { newpara = 1; next }
{
    ind = indent($0); t = substr($0, ind + 1)
    if (cont) {
        cont = (t ~ /\\$/); sub(/ *\\$/, "", t); cmd = cmd " " t
        if (!cont) done_cmd()
        next
    }
    if (newpara) {
        newpara = 0; prose = (ind < 4)
        if (prose) { region = 0; after = after && t ~ /^prints / }
        else if (!region) { region = 1; base = ind }
    }
    if (prose) next
    if (ind == base && t ~ /^([A-Za-z_][A-Za-z0-9_]*=('[^']*'|"[^"]*"|[^ ]*) +)*(\.\/freescale( |$)|(mpirun|srun|sbatch) -|scripts\/|bench\/)/ ||
        ind == base && t ~ /^([A-Za-z_][A-Za-z0-9_]*=('[^']*'|"[^"]*"|[^ ]*) +)*[A-Za-z_][A-Za-z0-9_]*=('[^']*'|"[^"]*"|[^ ]*) *\\$/) {
        cline = FNR; cont = (t ~ /\\$/); sub(/ *\\$/, "", t); cmd = t
        if (!cont) done_cmd()
        next
    }
    if (after && ind <= base + 2 && t !~ /^#/ && t != "...") emit("o", FNR, t)
}
