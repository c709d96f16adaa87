"""speedscope's import of Chrome Trace Event JSON, as its importer does it
(src/import/chrome.ts of the speedscope the e2e tests load): per (pid,
tid), times taken from the least ts; X events sorted by ts, then the
longer dur first, and split into a begin at ts and an end at ts + dur, in
doubles; begins and ends each sorted by time, stably; at equal times a
begin goes first when its key (name and args) is that of the next end, and
ends are reordered to close the innermost span first where one at that
time has its key, or else its name. The warnings it would print, so that
the golden tests see a trace that speedscope unbalances without a
browser: the e2e tests see it in one."""
import collections
import json


def _key(e):
    """A frame's key: its name, and its args as JSON.stringify writes them."""
    key = e.get("name") or "(unnamed)"
    if "args" in e:
        key += " " + json.dumps(e["args"], separators=(",", ":"), ensure_ascii=False)
    return key


def _queues(events):
    t0 = min(e["ts"] for e in events)
    xs = [dict(e, ts=e["ts"] - t0) for e in events if e["ph"] == "X"]
    xs.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))  # stable, as Array.sort
    begins = [dict(e, ts=e["ts"] - t0) for e in events if e["ph"] == "B"]
    ends = [dict(e, ts=e["ts"] - t0) for e in events if e["ph"] == "E"]
    for e in xs:
        begins.append(dict(e, ph="B"))
        ends.append(dict(e, ph="E", ts=e["ts"] + e.get("dur", 0)))
    begins.sort(key=lambda e: e["ts"])
    ends.sort(key=lambda e: e["ts"])
    return collections.deque(begins), collections.deque(ends)


def _innermost_first(ends, top):
    """speedscope's swap: an end at the first end's time that closes the
    innermost open span goes first (by key, then by name)."""
    for same in (lambda e: _key(e) == _key(top), lambda e: e.get("name") == top.get("name")):
        for u in range(1, len(ends)):
            if ends[u]["ts"] > ends[0]["ts"]:
                break
            if same(ends[u]):
                ends[0], ends[u] = ends[u], ends[0]
                return


def _track_warnings(events):
    begins, ends = _queues(events)
    stack, warnings = [], []
    while begins or ends:
        if not ends or (begins and (begins[0]["ts"] < ends[0]["ts"] or (
                begins[0]["ts"] == ends[0]["ts"] and _key(begins[0]) == _key(ends[0])))):
            stack.append(begins.popleft())
            continue
        if stack:
            _innermost_first(ends, stack[-1])
        end = ends.popleft()
        if not stack:
            warnings.append("ts=%r: end of %r with no span open" % (end["ts"], _key(end)))
        elif end.get("name") != stack[-1].get("name"):
            warnings.append("ts=%r: Tried to end %r when %r was on the top of the stack" %
                            (end["ts"], _key(end), _key(stack[-1])))
        else:
            if _key(end) != _key(stack[-1]):
                warnings.append("ts=%r: Tried to end %r when %r was on the top of the stack; "
                                "ending it instead" % (end["ts"], _key(end), _key(stack[-1])))
            stack.pop()
    warnings += ["%r still open at the end" % _key(e) for e in stack]
    return warnings


def warnings(events):
    """The warnings speedscope's import of events (a list of Trace Event
    objects) would print, per (pid, tid)."""
    tracks = {}
    for e in events:
        if e.get("ph") in ("B", "E", "X"):
            tracks.setdefault((e.get("pid"), e.get("tid")), []).append(e)
    out = []
    for key, evs in tracks.items():
        out += ["track %r: %s" % (key, w) for w in _track_warnings(evs)]
    return out
