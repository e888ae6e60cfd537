#!/usr/bin/env bash
# Merges the summaries of several `kir test` / `kir fuzz` runs (the shards of one run: `kir test
# --partition K/N`, `kir fuzz --shard K/N`; docs/testing.md, "Running on several machines").
#
#   bash scripts/merge-summaries.sh FILE...     # each FILE: the stdout of one run
#
# From each FILE it takes the last summary line, `P passed[ (U without expectation)], F failed, S
# skipped...` (kir test) or `fuzz: C cases, P passed, F failed[, X crashed NVIDIA's tools ...]...`
# (kir fuzz), and prints the sums in the same form, ending with `(merged from N runs)`:
#
#   133 passed, 0 failed, 60 skipped (merged from 3 runs)
#   fuzz: 300 cases, 300 passed, 0 failed (merged from 3 runs)
#
# Exit status: 1 when a run failed something or a FILE has no summary line (a shard that died or
# was cut off: named on stderr), 3 when nothing failed but NVIDIA's tools crashed in a fuzz run
# (as `kir fuzz` exits), 2 without FILE or with one that cannot be read, else 0.
set -uo pipefail

if [ "$#" -eq 0 ]; then
    echo "usage: bash scripts/merge-summaries.sh FILE... (the output of each kir test / kir fuzz run)" >&2
    exit 2
fi
for f in "$@"; do
    if [ ! -r "$f" ] || [ -d "$f" ]; then
        echo "error: $f: cannot read it" >&2
        exit 2
    fi
done

exec awk '
function num_before(line, word,    re, m) {
    # The number just before `word` in `line` (0 when absent).
    if (match(line, "[0-9]+ " word)) {
        m = substr(line, RSTART, RLENGTH)
        sub(" .*", "", m)
        return m + 0
    }
    return 0
}
# Per file (by name; an empty file has no line, so END walks the arguments), its last summary.
/^[0-9]+ passed( \([0-9]+ without expectation\))?, [0-9]+ failed, [0-9]+ skipped/ {
    k = FILENAME; kind[k] = "test"
    p[k] = num_before($0, "passed"); u[k] = num_before($0, "without expectation")
    f[k] = num_before($0, "failed"); s[k] = num_before($0, "skipped")
}
/^fuzz: [0-9]+ cases, [0-9]+ passed, [0-9]+ failed/ {
    k = FILENAME; kind[k] = "fuzz"
    c[k] = num_before($0, "cases"); p[k] = num_before($0, "passed")
    f[k] = num_before($0, "failed"); x[k] = num_before($0, "crashed NVIDIA")
}
END {
    missing = 0
    for (i = 1; i < ARGC; i++) {
        k = ARGV[i]
        if (!(k in kind)) {
            printf "error: %s: no summary line (did the run finish?)\n", k > "/dev/stderr"
            missing++
        } else if (kind[k] == "test") {
            tr++; tp += p[k]; tu += u[k]; tf += f[k]; ts += s[k]
        } else {
            fr++; fc += c[k]; fp += p[k]; ff += f[k]; fx += x[k]
        }
    }
    if (tr > 0) {
        unv = tu > 0 ? sprintf(" (%d without expectation)", tu) : ""
        printf "%d passed%s, %d failed, %d skipped (merged from %d run%s)\n", tp, unv, tf, ts, tr, tr == 1 ? "" : "s"
    }
    if (fr > 0) {
        crashed = fx > 0 ? sprintf(", %d crashed NVIDIA'"'"'s tools", fx) : ""
        printf "fuzz: %d cases, %d passed, %d failed%s (merged from %d run%s)\n", fc, fp, ff, crashed, fr, fr == 1 ? "" : "s"
    }
    if (missing > 0 || tf + ff > 0) exit 1
    if (fx > 0) exit 3
    exit 0
}
' "$@"
