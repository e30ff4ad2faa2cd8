#!/usr/bin/env bash
# A new user's first hour with caramel (issue 37), typed in an empty temp folder, typos included,
# with each answer; every hint bench prints is pasted and must work. Not a test: a tape to read.
#
#   perf/first_hour.sh                  # the README job with the `smoke` tag (60 iterations)
#   FULL=1 perf/first_hour.sh           # the README job itself (1500 iterations, minutes)
#   KEEP=1 perf/first_hour.sh           # keep the temp folder (report.html, dashboard.html,
#                                       # run.typescript: the README job's terminal, every frame)
#
# Runs the `bench` of this interpreter (python3 -m caramel; set PYTHONPATH=src for a checkout).
# Terminal output (the progress line, the table for people) is captured under `script`, at 100
# columns. Exits 1 when a check fails; the last line counts them.
set -u

WORK=$(mktemp -d "${TMPDIR:-/tmp}/first_hour.XXXXXX")
cd "$WORK" || exit 2
export CARAMEL_DATA_DIR="$WORK/.data" CARAMEL_HISTORY="$WORK/history.db"
unset CARAMEL_SYSTEMS_PATH CARAMEL_BENCHMARKS_PATH JUBE_BENCHMARK_OUTPATH
PY=${PYTHON:-python3}
CHECKS=0
FAILED=0

bench() { "$PY" -m caramel "$@"; }

# `typed ARGS...`: show the command and its answer; the answer stays in $ANSWER, its exit in $RC
typed() {
    printf '\n$ bench %s\n' "$*"
    ANSWER=$(bench "$@" 2>&1)
    RC=$?
    printf '%s\n[exit %s]\n' "$ANSWER" "$RC"
}

# `on_terminal ARGS...`: the same under `script` (a terminal of 100 columns), escapes stripped
on_terminal() {
    printf '\n$ bench %s    (on a terminal)\n' "$*"
    local quoted
    quoted=$(printf ' %q' "$@")
    script -q -e -c "stty cols 100 rows 50; $PY -m caramel$quoted" "$WORK/typescript" > /dev/null
    RC=$?
    cp "$WORK/typescript" "$WORK/$1.typescript"  # the raw terminal, frames and all (KEEP=1)
    ANSWER=$(sed -e 's/\r$//' "$WORK/typescript" | tr '\r' '\n' \
        | sed -e 's/\x1b\[[0-9;?]*[a-zA-Z]//g' -e '/^Script /d')
}

check() {  # check "what" CONDITION...
    local what=$1
    shift
    CHECKS=$((CHECKS + 1))
    if "$@"; then
        printf '  ok    %s\n' "$what"
    else
        FAILED=$((FAILED + 1))
        printf '  FAIL  %s\n' "$what"
    fi
}

says() { grep -qF -- "$1" <<< "$ANSWER"; }
silent_on() { ! grep -qF -- "$1" <<< "$ANSWER"; }
no_traceback() { silent_on "Traceback"; }
failed() { [ "$RC" -ne 0 ]; }
worked() { [ "$RC" -eq 0 ]; }
nothing_made() { [ -z "$(ls "$WORK")" ]; }

# The command a hint names after LABEL (a regex; up to a `;`, `)` or the line's end)
hinted() {
    local line
    line=$(grep -oE -- "$1 *bench [^;)]*" <<< "$ANSWER" | head -1)
    [ -n "$line" ] && line=${line#*bench } && printf '%s\n' "${line% }"
}
paste_hint() {  # paste_hint LABEL: run what the hint says; its answer replaces $ANSWER
    local words
    words=$(hinted "$1")
    [ -n "$words" ] || { RC=99; return; }
    # shellcheck disable=SC2086 # the hint's words, split as a shell splits a pasted line
    typed $words
}

echo "first hour in $WORK ($("$PY" -c 'import caramel; print(caramel.__file__)'))"

# --- typos: each gets a suggestion, and no run is made -----------------------------------------
typed run quickstart --tag lokal
check "a misspelt tag is refused with a suggestion" failed
check "  'did you mean local'" says "did you mean 'local'"
check "  and nothing was made" nothing_made
typed plan llm --tag 117M A10
check "a system tag near A100 suggests it" says "did you mean 'A100'"
typed plan llm --tag 117m local
check "a tag in the wrong case is named so" says "case-sensitive"
typed reslt
check "a misspelt command gets a suggestion" says "did you mean"
typed run quickstart --tags local
check "a flag of another spelling suggests --tag" says "--tag"
check "  and nothing was made" nothing_made

# --- an empty folder: the hint names a command that works --------------------------------------
typed status
check "status in an empty folder fails cleanly" no_traceback
check "  and suggests a run that exists" says "bench run quickstart --tag local"
paste_hint "start one here \\("
check "  the suggested run, pasted, works" worked
check "  and names the next command" says "its table: bench result -i last"
paste_hint "its table:"
check "  that command, pasted, works" worked

# --- what there is ------------------------------------------------------------------------------
typed benchmarks
check "bench benchmarks: a long description ends with …, not mid-word" says "…"
typed system list
typed system check local
check "system check local: no '0 of 0 checks hold'" silent_on "0 of 0"

# --- predict without a history: the hint names the benchmark and keeps the tags ----------------
typed plan llm --tag 800M A100 --predict
check "the hint names llm, not a site-packages path" \
    says "record some: bench run llm --tag 800M A100"
check "  and no path of the installed file" silent_on "site-packages"
# pasting it would submit to A100's SLURM: its plan (the same words) must work instead
words=$(hinted "record some:" | sed -e 's/ --repeat 3.*//' -e 's/^run /plan /')
# shellcheck disable=SC2086
typed $words
check "  the hinted command's plan works here" worked

# --- a site: detect, then the check it prints ---------------------------------------------------
typed system detect -o mysite.yaml
if worked; then
    check "detect prints a check command with --systems" says "--systems ."
    paste_hint "check it:"
    check "  that check, pasted, works" no_traceback
else
    check "no SLURM here: detect says so without a traceback" no_traceback
fi

# --- the README job: its progress line mid-run, then its table ------------------------------------
job=(run llm --tag 117M local)
[ "${FULL:-0}" = 1 ] || job+=(smoke)
on_terminal "${job[@]}"
echo "  progress lines seen (one per second at most; the first, a middle and the last):"
frames=$(grep -E "_benchmark: [0-9]+/[0-9]+ iterations" <<< "$ANSWER" | uniq)
middle=$(( ($(wc -l <<< "$frames") + 1) / 2 ))
{ head -1 <<< "$frames"; sed -n "${middle}p" <<< "$frames"; tail -1 <<< "$frames"; } | sed 's/^/    /'
eta() { grep -qE "iterations, [0-9.]+ s/iteration, ETA" <<< "$frames"; }
check "the README job shows its iterations, rate and ETA" eta
check "  and ends with the next command" says "its table: bench result -i last"
on_terminal result -i last
printf '%s\n' "$ANSWER"
check "a terminal gets the table for people (no 31-column CSV line)" silent_on "JobID,System"
check "  no empty JobID column on a local run" silent_on "JobID"
typed result -i last
check "a pipe gets the table's own CSV, full precision" says "JobID,System,Version"

# --- history: export, report, dashboard -----------------------------------------------------------
ANSWER=$(bench export 2>&1)
RC=$?
printf '\n$ bench export    (%s lines)\n' "$(wc -l <<< "$ANSWER")"
check "the export of a local run holds no unsubstituted \$system_ reference" silent_on '$system_'
typed report -i last --html report.html
check "report written" worked
typed dashboard -o dashboard.html
check "dashboard written" worked
ANSWER=$(cat report.html dashboard.html)
check "the pages point to bench --help, not docs/history.md" silent_on "docs/history.md"

printf '\n%s checks, %s failed\n' "$CHECKS" "$FAILED"
if [ "${KEEP:-0}" = 1 ]; then echo "kept: $WORK"; else rm -rf "$WORK"; fi
[ "$FAILED" -eq 0 ]
