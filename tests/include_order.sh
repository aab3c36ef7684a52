#!/bin/sh
# include_order: the source folders as a chain of layers (README, "Source
# map"): a file includes headers of its own layer and of the layers below
# it, never of one above. Every #include "folder/..." line (and "../folder/")
# of src/, cuda/ and fake/ is checked against the order written once below;
# a folder missing from it is an error too, so that a new folder is placed.
# Fails naming each file:line whose include climbs, or joins two folders
# kept apart (APART).
. "$(dirname "$0")/lib.sh"

# lowest first; the folders of one line form one layer (the backends
# beside backend/; the commands of cmd/ and the tools of tools/ form the
# top layer, beside each other)
LAYERS="base
comm
backend cuda fake
data
feature
embedding
model
balance
cli
eval
train
ckpt
cmd tools
main"
# pairs of folders that include neither way, whatever their order (the
# evaluation and the trainer meet in cmd/: cmd/eval_trainer.c)
APART="eval train"

found=0
for f in $(cd "$TOP_SRCDIR" && find src cuda fake -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort); do
    found=$((found + 1))
    echo "$f"
done > "$T/files"
[ "$found" -gt 100 ] || { fail "only $found source files under $TOP_SRCDIR"; finish; }

(cd "$TOP_SRCDIR" && xargs grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' < "$T/files") |
    awk -v layers="$LAYERS" -v apart="$APART" '
    BEGIN { n = split(layers, line, "\n")
            for (i = 1; i <= n; i++) { m = split(line[i], w, " "); for (j = 1; j <= m; j++) lv[w[j]] = i }
            n = split(apart, line, "\n")
            for (i = 1; i <= n; i++) { split(line[i], w, " "); away[w[1] " " w[2]] = away[w[2] " " w[1]] = 1 } }
    {
        file = $0; sub(/:.*/, "", file)
        rest = $0; sub(/^[^:]*:/, "", rest); ln = rest; sub(/:.*/, "", ln)
        inc = rest; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
        split(file, p, "/")
        from = p[1] == "src" ? (p[3] == "" ? "main" : p[2]) : p[1]
        up = 0
        while (inc ~ /^\.\.\//) { sub(/^\.\.\//, "", inc); up = 1 }
        sub(/^src\//, "", inc)
        if (inc ~ /\//) { to = inc; sub(/\/.*/, "", to) }
        else if (up) to = "main"      # "../x.h": a file of src/ itself
        else next                     # a header beside the file, config.h
        if (!(from in lv)) { printf "%s:%s: folder %s is not in the layer order\n", file, ln, from; bad++; next }
        if (!(to in lv)) { printf "%s:%s: includes %s: folder %s is not in the layer order\n", file, ln, inc, to; bad++; next }
        if ((from " " to) in away) { printf "%s:%s: %s includes %s: the two folders are kept apart\n", file, ln, from, inc; bad++ }
        else if (lv[to] > lv[from]) { printf "%s:%s: %s (layer %d) includes %s (layer %d, above it)\n", file, ln, from, lv[from], inc, lv[to]; bad++ }
        checked++
    }
    END { printf "%d includes across folders checked\n", checked; exit bad > 0 }' > "$T/report"
rc=$?
cat "$T/report"
[ $rc = 0 ] && pass "no include climbs the layer order ($found files)" ||
    fail "$(($(wc -l < "$T/report") - 1)) include(s) climb the layer order"
finish
