#!/bin/sh
# Seeds for fuzz_perf_data: small real perf.data files recorded here
# (`perf record` of `true` and of a shell loop: frame-pointer call graphs,
# a DWARF one with a 1 KiB copied stack, pipe mode, two events, context
# switches with their switch records for off-CPU time) beside the
# committed ones (tests/fuzz/seeds/perf-data, made the same way, and
# error-order.data, the fuzzer's: an fp sample whose call chain does not
# fit, then a record shorter than its header, where threads that had not
# decoded the sample yet said the second error, one thread the first;
# late-error-event-name.data, the fuzzer's too: a corrupt sample in the
# last batch, whose error threads said once the feature sections had
# renamed its event "cpu-clock:ppp", one thread as "cpu-clock";
# round-runs-moved.data, the fuzzer's too: a record framed by the
# reading thread after a run of records framed ahead, whose round read
# its last run through a pointer that growing its runs had moved), and
# each cut short by cut_seeds.sh, as a perf record that was killed leaves
# it. Where perf cannot record, the committed seeds alone (exit 0).
#
# usage: perfdata_seeds.sh CUT_SEEDS_SH COMMITTED_DIR OUT
set -eu
cut=$1 committed=$2 out=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
HOME=$tmp # perf's build-id cache: this script's own
export HOME
rec() {
    name=$1
    shift
    perf record -q -o "$tmp/rec/$name" "$@" >/dev/null 2>&1 || rm -f "$tmp/rec/$name"
}
mkdir -p "$tmp/rec"
cp "$committed"/* "$tmp/rec/"
if command -v perf >/dev/null 2>&1; then
    loop='i=0; while [ $i -lt 3000 ]; do i=$((i+1)); done'
    rec fp.data -g -- sh -c "$loop"
    rec dwarf.data --call-graph dwarf,1024 -- sh -c "$loop"
    rec events.data -g -e cpu-clock -e page-faults -- true
    rec offcpu.data -g -e cpu-clock -e context-switches/period=1/ --switch-events -- \
        sh -c "sleep 0.01; $loop"
    perf record -q -g -o - -- sh -c "$loop" >"$tmp/rec/pipe.data" 2>/dev/null ||
        rm -f "$tmp/rec/pipe.data"
fi
sh "$cut" "$out" "$tmp/rec"
cp "$tmp/rec"/* "$out/"
