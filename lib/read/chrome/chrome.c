/*
 * chrome.c - Chrome's Trace Event JSON (the array form, or {"traceEvents":
 * [...]}, as chrome://tracing, Perfetto and ember's own trace export write
 * it) and V8's CPU profiles (.cpuprofile, and the Profile/ProfileChunk/
 * CpuProfile events that DevTools puts in its traces), by the rules of
 * speedscope's importers (trace-event.ts, chrome.ts).
 *
 * This file reads the JSON as it streams: it knows where each value is (a
 * context per depth, and the key being read), keeps the values of the
 * current event in the capture, and hands the event to trace_events.c
 * (spans, thread names) or cpuprofile.c (CPU profiles) when it ends. A
 * trace that holds a CPU profile is read as that profile (its other events
 * are ignored), as speedscope does; otherwise it is read as its spans.
 *
 * Truncation: the array form may lack its closing ']' (the format allows
 * it, for tracers that crash), so an array cut between two events cannot
 * be told and is read whole. Anything else cut short is an error: an
 * array cut inside an event, an object ({"traceEvents": ...} or a
 * .cpuprofile) not closed.
 *
 * Invariants: see chrome_impl.h. Memory: one event's values and one
 * profile chunk at a time here; the rest is the other two files'.
 */
#include "read/chrome/chrome_impl.h"
#include "read/read_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

/* ---- helpers ---------------------------------------------------------------------------- */

/* Keeps a value of the event in the capture (cut to MAX_TEXT bytes). */
static int text_set(struct text *t, const void *s, size_t n)
{
    if (n > MAX_TEXT)
        n = MAX_TEXT;
    if (EMBER_VEC_RESERVE(t->s, t->cap, n + 1) < 0)
        return -ENOMEM;
    memcpy(t->s, s, n);
    t->s[n] = '\0';
    t->len = n;
    t->set = true;
    return 0;
}

/* A duration in nanoseconds as µs with as few decimals as it needs. */
static struct ember_decimal ns_to_us(int64_t ns)
{
    struct ember_decimal d = {ns, 3};
    while (d.digits > 0 && d.mant % 10 == 0)
        d.mant /= 10, d.digits--;
    return d;
}

int ember_chrome_add_weight(struct chrome_reader *r, struct ember_profile *t, uint32_t node,
                            int64_t ns)
{
    if (ns <= 0 || node == EMBER_ROOT)
        return 0;
    int err = ember_profile_add_decimal(t, node, 0, ns_to_us(ns));
    if (!err)
        r->st->samples++;
    return err;
}

size_t ember_chrome_pair_key(char *buf, size_t size, const char *a, const char *b)
{
    int n = snprintf(buf, size, "%s\x1f%s", a, b);
    return n < 0 ? 0 : (size_t)n < size ? (size_t)n : size - 1;
}

int ember_chrome_add_placeholder(struct ember_profile *t, size_t k, uint32_t *node)
{
    char name[24];
    uint32_t frame;
    int n = snprintf(name, sizeof(name), "%c%zu", EMBER_JSON_PLACEHOLDER, k);
    int err = ember_profile_intern(t, name, (size_t)n, &frame);
    return err ? err : ember_profile_child(t, EMBER_ROOT, frame, node);
}

long ember_chrome_read_placeholder(const char *name, size_t len)
{
    if (len < 2 || name[0] != EMBER_JSON_PLACEHOLDER)
        return -1;
    return strtol(name + 1, NULL, 10);
}

/* ---- events ---------------------------------------------------------------------------- */

static void capture_reset(struct capture *c)
{
    c->ph = 0;
    c->name.set = c->pid.set = c->tid.set = c->id.set = c->meta.set = false;
    c->has_ts = c->has_dur = c->has_tdur = false;
    c->nnodes = c->nchildren = c->nsamples = c->ndeltas = c->names_len = 0;
}

static int event_end(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    if (text_is(&c->name, "Profile") || text_is(&c->name, "ProfileChunk") ||
        text_is(&c->name, "CpuProfile"))
        return ember_cpuprofile_add_event(r, c);
    int err = ember_trace_events_add(r, c);
    return err ? ember_json_error(&r->j, err) : 1;
}

/* ---- the JSON paths ----------------------------------------------------------------------- */

static enum ctx here(const struct chrome_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 ? C_NONE : d <= MAX_DEPTH ? r->ctx[d - 1] : C_SKIP;
}

static enum key here_key(const struct chrome_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 || d > MAX_DEPTH ? K_OTHER : r->key[d - 1];
}

/* The keys that matter, by context (a key is looked up for every value of
 * the input: by length first). */
struct key_name {
    enum ctx ctx;
    uint8_t len;
    char name[14];
    enum key key;
};

#define KEY(c, s, k)                                                                               \
    {                                                                                              \
        c, sizeof(s) - 1, s, k                                                                     \
    }
static const struct key_name keys[] = {
    KEY(C_TOP, "traceEvents", K_TRACE_EVENTS),
    KEY(C_TOP, "nodes", K_NODES),
    KEY(C_TOP, "samples", K_SAMPLES),
    KEY(C_TOP, "timeDeltas", K_DELTAS),
    KEY(C_EVENT, "ph", K_PH),
    KEY(C_EVENT, "name", K_NAME),
    KEY(C_EVENT, "ts", K_TS),
    KEY(C_EVENT, "dur", K_DUR),
    KEY(C_EVENT, "tdur", K_TDUR),
    KEY(C_EVENT, "pid", K_PID),
    KEY(C_EVENT, "tid", K_TID),
    KEY(C_EVENT, "id", K_ID),
    KEY(C_EVENT, "args", K_ARGS),
    KEY(C_ARGS, "name", K_NAME),
    KEY(C_ARGS, "data", K_DATA),
    KEY(C_DATA, "cpuProfile", K_CPU),
    KEY(C_DATA, "timeDeltas", K_DELTAS),
    KEY(C_CPU, "nodes", K_NODES),
    KEY(C_CPU, "samples", K_SAMPLES),
    KEY(C_CPU, "timeDeltas", K_DELTAS),
    KEY(C_NODE, "id", K_ID),
    KEY(C_NODE, "parent", K_PARENT),
    KEY(C_NODE, "children", K_CHILDREN),
    KEY(C_NODE, "callFrame", K_CALLFRAME),
    KEY(C_CALLFRAME, "functionName", K_FUNCTION),
    KEY(C_CALLFRAME, "url", K_URL),
    KEY(C_CALLFRAME, "lineNumber", K_LINE),
};
#undef KEY

/* The keys of an event, the most frequent lookup, without a loop. */
static enum key event_key(const unsigned char *s, size_t n)
{
    switch (n) {
    case 2:
        return s[0] == 'p' && s[1] == 'h'   ? K_PH
               : s[0] == 't' && s[1] == 's' ? K_TS
               : s[0] == 'i' && s[1] == 'd' ? K_ID
                                            : K_OTHER;
    case 3:
        return memcmp(s, "dur", 3) == 0   ? K_DUR
               : memcmp(s, "pid", 3) == 0 ? K_PID
               : memcmp(s, "tid", 3) == 0 ? K_TID
                                          : K_OTHER;
    case 4:
        return memcmp(s, "name", 4) == 0   ? K_NAME
               : memcmp(s, "args", 4) == 0 ? K_ARGS
               : memcmp(s, "tdur", 4) == 0 ? K_TDUR
                                           : K_OTHER;
    default:
        return K_OTHER;
    }
}

static enum key key_of(enum ctx c, const unsigned char *s, size_t n)
{
    if (c == C_EVENT)
        return event_key(s, n);
    if (c != C_TOP && c != C_EVENT && c != C_ARGS && c != C_DATA && c != C_CPU && c != C_NODE &&
        c != C_CALLFRAME)
        return K_OTHER;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
        if (keys[i].ctx == c && keys[i].len == n && memcmp(keys[i].name, s, n) == 0)
            return keys[i].key;
    return K_OTHER;
}

static enum ctx child(const struct chrome_reader *r, bool map)
{
    enum ctx c = here(r);
    enum key k = here_key(r);
    if (c == C_NONE)
        return map ? C_TOP : C_EVENTS;
    if (c == C_EVENTS)
        return map ? C_EVENT : C_SKIP;
    if (c == C_NODES)
        return map ? C_NODE : C_SKIP;
    if (map) {
        if ((c == C_EVENT && k == K_ARGS) || (c == C_ARGS && k == K_DATA) ||
            (c == C_DATA && k == K_CPU) || (c == C_NODE && k == K_CALLFRAME))
            return c == C_EVENT ? C_ARGS : c == C_ARGS ? C_DATA : c == C_DATA ? C_CPU : C_CALLFRAME;
        return C_SKIP;
    }
    if (c == C_TOP && k == K_TRACE_EVENTS)
        return C_EVENTS;
    if ((c == C_TOP || c == C_CPU) && k == K_NODES)
        return C_NODES;
    if ((c == C_TOP || c == C_CPU) && k == K_SAMPLES)
        return C_SAMPLES;
    if ((c == C_TOP || c == C_CPU || c == C_DATA) && k == K_DELTAS)
        return C_DELTAS;
    if (c == C_NODE && k == K_CHILDREN)
        return C_CHILDREN;
    return C_SKIP;
}

static int open_container(struct chrome_reader *r, bool map)
{
    enum ctx c = child(r, map);
    if (c == C_EVENT)
        capture_reset(&r->cap);
    if (c == C_NODE) {
        r->cap.node = (struct cap_node){0};
        r->cap.node_children = r->cap.nchildren;
        r->cap.fn.set = r->cap.url.set = r->cap.line_set = false;
    }
    if (c == C_EVENTS)
        r->saw_events = true;
    if (c == C_TOP)
        r->top_object = true;
    ember_json_begin(&r->j, map);
    if (r->j.depth <= MAX_DEPTH) {
        r->ctx[r->j.depth - 1] = c;
        r->key[r->j.depth - 1] = K_OTHER;
    }
    return 1;
}

static int close_container(struct chrome_reader *r)
{
    enum ctx c = here(r);
    ember_json_end(&r->j);
    if (c == C_EVENT)
        return event_end(r);
    if (c == C_NODE)
        return ember_cpuprofile_end_node(r);
    if (here(r) == C_TOP && (c == C_NODES || c == C_SAMPLES || c == C_DELTAS)) {
        /* a .cpuprofile: its parts go to its profile as they end */
        return ember_cpuprofile_add_part(r, c == C_NODES);
    }
    return 1;
}

static int on_number(void *ctx, const char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    struct capture *cap = &r->cap;
    int done = ember_cpuprofile_number(r, c, k, s, n);
    if (done >= 0)
        return done;
    if (c == C_EVENT) {
        switch (k) {
        case K_TS:
            cap->has_ts = ember_json_fixed(s, n, &cap->ts);
            break;
        case K_DUR:
            cap->has_dur = ember_json_fixed(s, n, &cap->dur);
            break;
        case K_TDUR:
            cap->has_tdur = ember_json_fixed(s, n, &cap->tdur);
            break;
        case K_PID:
        case K_TID:
        case K_ID:
            return text_set(k == K_PID   ? &cap->pid
                            : k == K_TID ? &cap->tid
                                         : &cap->id,
                            s, n > MAX_ID_TEXT - 1 ? MAX_ID_TEXT - 1 : n)
                       ? ember_json_error(&r->j, -ENOMEM)
                       : 1;
        default:
            break;
        }
    }
    if (c == C_NONE)
        return ember_json_fail(&r->j, "expected a Chrome trace ([events] or {\"traceEvents\": "
                                      "[...]}) or a .cpuprofile, not a number");
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    struct capture *cap = &r->cap;
    struct text *t = NULL;
    if (c == C_EVENT && k == K_PH)
        cap->ph = n == 1 ? (char)s[0] : '?';
    else if (c == C_EVENT && k == K_NAME)
        t = &cap->name;
    else if (c == C_EVENT && (k == K_PID || k == K_TID || k == K_ID))
        t = k == K_PID ? &cap->pid : k == K_TID ? &cap->tid : &cap->id;
    else if (c == C_ARGS && k == K_NAME)
        t = &cap->meta;
    else if (c == C_CALLFRAME && (k == K_FUNCTION || k == K_URL))
        t = k == K_FUNCTION ? &cap->fn : &cap->url;
    else if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN)
        return ember_json_fail(&r->j, "expected an integer, not a string");
    else if (c == C_NONE)
        return ember_json_fail(&r->j, "expected a Chrome trace ([events] or {\"traceEvents\": "
                                      "[...]}) or a .cpuprofile, not a string");
    if (t && (k == K_PID || k == K_TID || k == K_ID) && n > MAX_ID_TEXT - 1)
        n = MAX_ID_TEXT - 1;
    if (t && text_set(t, s, n))
        return ember_json_error(&r->j, -ENOMEM);
    return 1;
}

static int on_scalar(void *ctx)
{
    struct chrome_reader *r = ctx;
    enum ctx c = here(r);
    if (c == C_SAMPLES || c == C_DELTAS || c == C_CHILDREN || c == C_NONE)
        return on_string(ctx, (const unsigned char *)"", 0);
    return 1;
}

static int on_bool(void *ctx, int b)
{
    (void)b;
    return on_scalar(ctx);
}

static int on_key(void *ctx, const unsigned char *s, size_t n)
{
    struct chrome_reader *r = ctx;
    if (r->j.depth > 0 && r->j.depth <= MAX_DEPTH)
        r->key[r->j.depth - 1] = key_of(here(r), s, n);
    return 1;
}

static int on_start_map(void *ctx)
{
    return open_container(ctx, true);
}

static int on_start_array(void *ctx)
{
    return open_container(ctx, false);
}

static int on_end(void *ctx)
{
    return close_container(ctx);
}

static const yajl_callbacks callbacks = {
    .yajl_null = on_scalar,
    .yajl_boolean = on_bool,
    .yajl_number = on_number,
    .yajl_string = on_string,
    .yajl_start_map = on_start_map,
    .yajl_map_key = on_key,
    .yajl_end_map = on_end,
    .yajl_start_array = on_start_array,
    .yajl_end_array = on_end,
};

/* ---- the result ------------------------------------------------------------------------ */

/* Where an input cut short ends: the innermost part that means something. */
static const char *cut_inside(const struct chrome_reader *r)
{
    for (unsigned d = r->j.depth < MAX_DEPTH ? r->j.depth : MAX_DEPTH; d-- > 0;) {
        switch (r->ctx[d]) {
        case C_EVENT:
            return "an event";
        case C_NODES:
            return "the CPU profile's \"nodes\"";
        case C_SAMPLES:
            return "the CPU profile's \"samples\"";
        case C_DELTAS:
            return "the CPU profile's \"timeDeltas\"";
        case C_EVENTS:
            return r->top_object ? "\"traceEvents\"" : "the array of events";
        case C_TOP:
            return r->saw_events ? "the trace's object" : "the top-level object";
        default:
            break;
        }
    }
    return "a JSON value";
}

static int finish(struct chrome_reader *r, struct ember_diag *d)
{
    const char *file = r->j.file;
    /* the array form may lack its closing ']', nothing more */
    if (r->j.truncated && (r->top_object || !r->saw_events || r->j.depth != 1))
        return ember_json_truncated(&r->j, cut_inside(r));
    if (!r->saw_events && r->top_profile < 0)
        return ember_diag_set(d, -EINVAL, file, 1,
                              "expected a Chrome trace ([events] or {\"traceEvents\": [...]}) or "
                              "a .cpuprofile ({\"nodes\": [...], \"samples\": [...], ...})");
    int err = ember_cpuprofile_finish(r);
    if (!err)
        err = ember_trace_events_finish(r);
    size_t weighed = ember_cpuprofile_weighed(r);
    if (!err)
        err = weighed ? ember_cpuprofile_graft(r) : ember_trace_events_graft(r);
    if (!err && (weighed || r->nthreads)) /* for the writers that say it */
        ember_profile_set_unit(r->p, weighed ? "cpu" : "time", "microseconds");
    if (err == -ERANGE)
        return ember_diag_set(d, err, file, 0, "weights overflow a 64-bit total");
    return err;
}

static void release(struct chrome_reader *r)
{
    struct capture *c = &r->cap;
    struct text *texts[] = {&c->name, &c->pid, &c->tid, &c->id, &c->meta, &c->fn, &c->url};
    for (size_t i = 0; i < sizeof(texts) / sizeof(texts[0]); i++)
        free(texts[i]->s);
    free(c->nodes);
    free(c->names);
    free(c->children);
    free(c->samples);
    free(c->deltas);
    ember_trace_events_release(r);
    ember_cpuprofile_release(r);
}

static int chrome_read(struct ember_profile *p, struct ember_input *in,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       struct ember_diag *d)
{
    struct chrome_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->p = p;
    r->st = st;
    r->j = (struct ember_json){.in = in, .file = ember_input_name(in), .d = d, .o = o};
    int err = ember_trace_events_init(r);
    if (!err)
        err = ember_cpuprofile_init(r);
    if (!err)
        err = ember_json_parse(&r->j, &callbacks, r);
    if (!err)
        err = finish(r, d);
    release(r);
    free(r);
    return err;
}

/* '[' then an object with "ph" (trace events), or '{' with "traceEvents",
 * or with a .cpuprofile's "nodes" and "callFrame". */
static enum ember_probe chrome_probe(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len)
        return EMBER_PROBE_NO;
    if (data[i] == '[') {
        while (++i < len &&
               (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
            ;
        if (i < len && data[i] != '{' && data[i] != ']')
            return EMBER_PROBE_NO;
        return memmem(data, len, "\"ph\"", 4) ? EMBER_PROBE_YES : EMBER_PROBE_MAYBE;
    }
    if (data[i] != '{')
        return EMBER_PROBE_NO;
    if (memmem(data, len, "\"traceEvents\"", 13) ||
        (memmem(data, len, "\"nodes\"", 7) && memmem(data, len, "\"callFrame\"", 11)))
        return EMBER_PROBE_YES;
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_chrome = {
    .name = "chrome",
    .description = "Chrome trace events (X, B/E spans) and V8 CPU profiles (.cpuprofile)",
    .probe = chrome_probe,
    .read = chrome_read,
};
