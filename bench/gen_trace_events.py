"""Writes a large Chrome Trace Event JSON file for measuring ember's chrome
reader: THREADS threads running tasks of 200 kinds, each a fixed tree of
nested spans ("B"/"E" pairs around "X" events, names from a pool of 2,000)
with random durations, until SIZE megabytes.

usage: gen_trace_events.py OUT SIZE_MB [in-order|post-order]

in-order: each thread's events in time order (what ember's export and
Perfetto write; ember streams them). post-order: each "X" written when it
ends, children before parents (what Chrome and clang -ftime-trace write;
ember buffers such threads and sorts them).
"""
import random
import sys

THREADS = 8


def main():
    out, size_mb = sys.argv[1], float(sys.argv[2])
    order = sys.argv[3] if len(sys.argv) > 3 else "in-order"
    rnd = random.Random(7)
    names = ["fn_%d_%s" % (i, rnd.choice(["parse", "eval", "draw", "io", "gc"])) for i in range(2000)]
    limit = int(size_mb * 1e6)
    clock = [0.0] * THREADS
    written = 0
    with open(out, "w") as f:
        f.write('{"traceEvents":[\n')
        for t in range(THREADS):
            f.write('{"ph":"M","pid":1,"tid":%d,"name":"thread_name","args":{"name":"worker-%d"}},\n'
                    % (t, t))
        first = True

        def emit(text):
            nonlocal first, written
            f.write(("" if first else ",\n") + text)
            written += len(text) + 2
            first = False

        # the program: 200 kinds of task, each a fixed tree of calls (a
        # profile has as many distinct stacks as the code has paths)
        def shape(depth):
            kids = [shape(depth + 1) for _ in range(rnd.randrange(0, 4) if depth < 5 else 0)]
            return (names[rnd.randrange(len(names))], kids)

        shapes = [shape(0) for _ in range(200)]

        def task(t, depth, tree=None):
            """One span with nested children; returns the events of this span."""
            name, kids = tree or shapes[rnd.randrange(len(shapes))]
            start = clock[t]
            clock[t] += rnd.randrange(1, 20) / 8
            events = []
            for kid in kids:
                events += task(t, depth + 1, kid)
                clock[t] += rnd.randrange(1, 10) / 4
            dur = clock[t] - start
            if depth % 2 or order == "post-order":
                x = '{"ph":"X","pid":1,"tid":%d,"ts":%.3f,"dur":%.3f,"name":"%s"}' % (t, start, dur, name)
                return [x] + events if order == "in-order" else events + [x]
            b = '{"ph":"B","pid":1,"tid":%d,"ts":%.3f,"name":"%s"}' % (t, start, name)
            e = '{"ph":"E","pid":1,"tid":%d,"ts":%.3f,"name":"%s"}' % (t, clock[t], name)
            return [b] + events + [e]

        while written < limit:
            for t in range(THREADS):
                for ev in task(t, 0):
                    emit(ev)
        f.write('\n],"displayTimeUnit":"ns"}\n')


if __name__ == "__main__":
    main()
