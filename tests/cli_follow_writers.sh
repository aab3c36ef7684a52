#!/bin/sh
# cli_follow_writers: the data tools deliver a stream's files whole
# (doc/data.md "Following a stream of files"): data gen --stream
# --split-days, stopped by SIGTERM, SIGINT or SIGHUP while it writes a
# day file, leaves no temporary (DIR/day-N.h5.tmp.PID) and no partial day
# file: every day-*.h5 in DIR passes data check and carries the root
# attribute complete = its number of events (h5py, when present). The
# signal is sent once the first day file and a temporary exist (the
# process is mid-write or between two files: either way nothing partial
# may remain).
. "$(dirname "$0")/lib.sh"
G="--stream --days 200 --users 30000 --items 3000 --active 1 --per-day 10,20 --seed 3"
for sig in TERM INT HUP; do
    D="$T/$sig"
    "$FS" data gen $G --split-days "$D" >"$T/out" 2>"$T/err" &
    pid=$!
    i=0 # a hang guard, never reached: the second day's temporary (a day file written)
    while ! ls "$D"/day-0000.h5 "$D"/*.tmp.* >/dev/null 2>&1 && [ $i -lt 6000 ] &&
        kill -0 $pid 2>/dev/null; do
        sleep 0.05
        i=$((i + 1))
    done
    kill -$sig $pid 2>/dev/null
    wait $pid 2>/dev/null
    rc=$?
    [ $rc -gt 128 ] && pass "SIG$sig: data gen ended by the signal (exit $rc)" ||
        fail "SIG$sig: data gen exit $rc, not by the signal (it ended before it?): $(head -c 300 "$T/err")"
    left=$(ls -A "$D" | grep -v '^day-[0-9]*\.h5$' | tr '\n' ' ')
    [ -z "$left" ] && pass "SIG$sig: no temporary left" || fail "SIG$sig: left behind: $left"
    n=$(ls "$D" | grep -c '^day-[0-9]*\.h5$')
    if [ "$n" -gt 0 ]; then
        expect_ok "$FS" data check "$D"/day-*.h5
    else
        pass "SIG$sig: stopped within the first day file (none written)"
    fi
    if [ "$n" -gt 0 ] && have_h5py; then
        "$PY" - "$D"/day-*.h5 <<'PYEOF' >"$T/p.out" 2>&1 && pass "SIG$sig: $(cat "$T/p.out")" || fail "SIG$sig: $(cat "$T/p.out")"
import sys, h5py
for p in sys.argv[1:]:
    with h5py.File(p, "r") as f:
        assert f.attrs["complete"] == f["item_ids"].shape[0] == f["offsets"][-1], p
print(f"{len(sys.argv) - 1} day files, each with complete = its events")
PYEOF
    fi
done
finish
