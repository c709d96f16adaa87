/*
 * memtrace.c - memtrace's .ctf allocation traces (OCaml's statmemprof,
 * written by Jane Street's memtrace) as a profile: the format row.
 *
 * One client of the decoder (memtrace_decode.h). Each allocation event is a
 * sample whose stack is its backtrace, outermost (main) first, each location
 * code becoming its locations' frames (function = defname, file, line): the
 * first the function the code is in, the others inlined into it
 * (EMBER_FRAME_INLINED). A code without a location (the program's entry,
 * code the runtime has no debug information for) is "[unknown]": its code
 * is only stable within one trace, so a name made of it would keep the same
 * caller apart in two traces that a diff compares (with --addresses the code
 * is kept as the frame's address). Values: samples (the default; Σ
 * nsamples), words (Σ block length, header excluded, as memtrace counts),
 * bytes (words × word_size / 8), and the same for the blocks never
 * collected (live_*). With --memtrace-source, each stack starts with its
 * allocation source, [minor], [major] or [external] (OCaml's minor heap,
 * major heap, Memtrace.External), so that the graph's top splits by it.
 * --from/--to keep the allocations made in the window; live_* are those of
 * them still held at its end (their weights are added once known: at the
 * end, in allocation order, or when collected after the window; never
 * added then taken back, so a flame chart's sequence stays positive). The
 * counter "heap" is the live sampled bytes
 * over the whole trace. Packets memtrace's own reader skips (another
 * process's, out of order, and a last one cut short) are skipped with a
 * warning.
 * Invariants: every code a backtrace holds was defined (the decoder checks),
 * so its frames are known; the live table holds each block allocated and not
 * yet collected, whatever the window.
 */
#include "read/read_impl.h"
#include "read/memtrace/memtrace_decode.h"
#include "read/memtrace/memtrace_live.h"
#include "base/diag.h"
#include "base/u64map.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { V_SAMPLES, V_WORDS, V_BYTES, V_LIVE_SAMPLES, V_LIVE_WORDS, V_LIVE_BYTES, NVALUES };

static const char *const value_type[NVALUES][2] = {
    {"samples", "count"},      {"words", "words"},      {"bytes", "bytes"},
    {"live_samples", "count"}, {"live_words", "words"}, {"live_bytes", "bytes"},
};

struct mt_span {
    uint32_t first, n; /* in frames */
};

/* The stack so far: the previous allocation's codes, and for its frames
 * (root first) their nodes; code i's frames end at code_end[i]. */
struct mt_path {
    uint64_t *codes;
    size_t ncodes, codes_cap;
    uint32_t *nodes;
    size_t nodes_cap;
    size_t *code_end;
    size_t code_end_cap;
    int source; /* -1: no stack yet */
    unsigned domain;
};

struct mt_profile {
    struct ember_profile *p;
    struct ember_input *in;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    struct ember_diag *d;
    unsigned value[NVALUES];
    uint32_t *frames; /* the frames of each code, back to back */
    size_t nframes, frames_cap;
    struct mt_span *spans;
    size_t nspans, spans_cap;
    struct ember_u64map code; /* code -> span */
    uint32_t *stack;          /* the current allocation's frames, root first */
    size_t stack_cap;
    struct mt_path path;
    uint32_t source_frame[3], empty_frame;
    bool sources;
    uint64_t word_bytes;
    uint64_t from_ns, to_ns; /* the window, from the start; to_ns UINT64_MAX: the end */
    struct mt_live live;
    struct mt_heap_track heap;
};

static int intern_name(struct mt_profile *m, const char *name, uint32_t *f)
{
    return ember_profile_intern(m->p, name, strlen(name), f);
}

static int on_info(void *ctx, const struct mt_info *info)
{
    struct mt_profile *m = ctx;
    char text[1024];
    int n = snprintf(text, sizeof(text),
                     "memtrace trace (format v%u) of %s, pid %llu on %s; sample_rate %.17g; "
                     "context %s",
                     info->version, info->executable_name, (unsigned long long)info->pid,
                     info->host_name, info->sample_rate, *info->context ? info->context : "none");
    m->word_bytes = info->word_size / 8;
    struct ember_profile_meta meta = *ember_profile_meta(m->p);
    meta.time_nanos = (int64_t)(info->start_time_us * 1000);
    int err = ember_profile_set_meta(m->p, &meta);
    if (!err)
        err = ember_profile_add_comment(m->p, text,
                                        (size_t)n < sizeof(text) ? (size_t)n : sizeof(text) - 1);
    return err;
}

static int on_location(void *ctx, uint64_t code, const struct mt_location *locs, size_t n)
{
    struct mt_profile *m = ctx;
    size_t want = n ? n : 1;
    if (EMBER_VEC_RESERVE(m->frames, m->frames_cap, m->nframes + want) < 0 ||
        EMBER_VEC_RESERVE(m->spans, m->spans_cap, m->nspans + 1) < 0)
        return -ENOMEM;
    struct mt_span *s = &m->spans[m->nspans];
    *s = (struct mt_span){.first = (uint32_t)m->nframes, .n = (uint32_t)want};
    int err = 0;
    for (size_t i = 0; i < n && !err; i++) {
        const struct mt_location *l = &locs[i];
        struct ember_frame f = {.name = l->defname,
                                .name_len = strlen(l->defname),
                                .file = l->file,
                                .file_len = strlen(l->file),
                                .line = l->line,
                                .module = EMBER_NO_MODULE,
                                .kind = i ? EMBER_FRAME_INLINED : EMBER_FRAME_USER,
                                .pid = -1,
                                .tid = -1};
        err = ember_profile_intern_frame(m->p, &f, &m->frames[m->nframes + i]);
    }
    if (!n) {
        struct ember_frame f = {.name = "[unknown]",
                                .name_len = 9,
                                .module = EMBER_NO_MODULE,
                                .address = code,
                                .has_address = m->o->addresses,
                                .pid = -1,
                                .tid = -1};
        err = ember_profile_intern_frame(m->p, &f, &m->frames[m->nframes]);
    }
    if (err)
        return err;
    m->nframes += want;
    return ember_u64map_put(&m->code, code, (uint32_t)m->nspans++);
}

/* Appends code i's frames (its span) to the path's frames from *n on. */
static int push_code(struct mt_profile *m, struct mt_path *s, size_t i, uint64_t code, size_t *n)
{
    uint32_t sp;
    ember_u64map_get(&m->code, code, &sp); /* defined: the decoder checked */
    const struct mt_span *span = &m->spans[sp];
    if (EMBER_VEC_RESERVE(m->stack, m->stack_cap, *n + span->n) < 0 ||
        EMBER_VEC_RESERVE(s->code_end, s->code_end_cap, i + 1) < 0)
        return -ENOMEM;
    memcpy(m->stack + *n, m->frames + span->first, span->n * sizeof(uint32_t));
    *n += span->n;
    s->code_end[i] = *n;
    return 0;
}

/* The allocation's node: consecutive allocations share most of their
 * backtraces (memtrace encodes them so), so the frames and nodes of the
 * codes they share with the previous one are kept, and only the rest is
 * looked up and descended. */
static int node_of(struct mt_profile *m, const struct mt_alloc *a, uint32_t *node)
{
    struct mt_path *s = &m->path;
    size_t base = m->sources ? 1 : 0, k = 0, n, kept;
    /* what the decoder says is shared costs nothing (a crafted trace can
     * repeat a long backtrace in a few bytes); the rest is compared */
    if (s->source == (int)a->source && s->domain == a->domain)
        k = a->shared < s->ncodes ? a->shared : s->ncodes;
    if (s->source == (int)a->source)
        while (k < s->ncodes && k < a->backtrace_len && s->codes[k] == a->backtrace[k])
            k++;
    kept = s->source != (int)a->source ? 0 : k ? s->code_end[k - 1] : base;
    if (EMBER_VEC_RESERVE(m->stack, m->stack_cap, base + 1) < 0)
        return -ENOMEM;
    if (m->sources)
        m->stack[0] = m->source_frame[a->source];
    n = k ? s->code_end[k - 1] : base;
    int err = 0;
    for (size_t i = k; i < a->backtrace_len && !err; i++)
        err = push_code(m, s, i, a->backtrace[i], &n);
    if (!err && n == base) /* room for it: reserved above */
        m->stack[n++] = m->empty_frame;
    if (!err && (EMBER_VEC_RESERVE(s->nodes, s->nodes_cap, n) < 0 ||
                 EMBER_VEC_RESERVE(s->codes, s->codes_cap, a->backtrace_len) < 0))
        err = -ENOMEM;
    for (size_t j = kept; j < n && !err; j++)
        err =
            ember_profile_child(m->p, j ? s->nodes[j - 1] : EMBER_ROOT, m->stack[j], &s->nodes[j]);
    if (err)
        return s->source = -1, err;
    if (a->backtrace_len > k) /* an empty backtrace has no buffer */
        memcpy(s->codes + k, a->backtrace + k, (a->backtrace_len - k) * sizeof(uint64_t));
    s->ncodes = a->backtrace_len;
    s->source = (int)a->source;
    s->domain = a->domain;
    *node = s->nodes[n - 1];
    return 0;
}

static bool in_window(const struct mt_profile *m, uint64_t dt_us)
{
    return dt_us * 1000 >= m->from_ns && dt_us * 1000 < m->to_ns;
}

static int on_alloc(void *ctx, const struct mt_alloc *a)
{
    struct mt_profile *m = ctx;
    struct mt_live_obj o = {
        .id = a->obj_id, .nsamples = a->nsamples, .words = a->length, .node = UINT32_MAX};
    int err = mt_heap_track_add(&m->heap, a->dt_us * 1000, (int64_t)(a->length * m->word_bytes));
    if (!err && in_window(m, a->dt_us)) {
        int64_t w[EMBER_MAX_VALUES] = {0};
        w[m->value[V_SAMPLES]] = (int64_t)a->nsamples;
        w[m->value[V_WORDS]] = (int64_t)a->length;
        w[m->value[V_BYTES]] = (int64_t)(a->length * m->word_bytes);
        err = node_of(m, a, &o.node);
        for (unsigned v = 0; v < NVALUES && !err; v++)
            err = w[m->value[v]] ? ember_profile_add(m->p, o.node, m->value[v], w[m->value[v]]) : 0;
        m->st->samples++;
    } else {
        m->path.source = -1; /* the decoder's "shared" is with an allocation left out */
    }
    return err ? err : mt_live_put(&m->live, &o);
}

/* A block held at the window's end: its live_* weights (added once known,
 * never taken back: a flame chart's sequence has no negative entries). */
static int add_live(struct mt_profile *m, const struct mt_live_obj *o)
{
    int err = ember_profile_add(m->p, o->node, m->value[V_LIVE_SAMPLES], (int64_t)o->nsamples);
    if (!err)
        err = ember_profile_add(m->p, o->node, m->value[V_LIVE_WORDS], (int64_t)o->words);
    return err ? err
               : ember_profile_add(m->p, o->node, m->value[V_LIVE_BYTES],
                                   (int64_t)(o->words * m->word_bytes));
}

static int by_id(const void *a, const void *b)
{
    uint64_t x = ((const struct mt_live_obj *)a)->id, y = ((const struct mt_live_obj *)b)->id;
    return x < y ? -1 : x > y;
}

/* The blocks of the window never collected, in allocation order. */
static int add_held(struct mt_profile *m)
{
    uint64_t all = mt_live_count(&m->live);
    struct mt_live_obj *held = malloc((all + 1) * sizeof(*held));
    size_t n = 0;
    if (!held)
        return -ENOMEM;
    mt_live_all(&m->live, held);
    for (uint64_t i = 0; i < all; i++)
        if (held[i].node != UINT32_MAX)
            held[n++] = held[i];
    qsort(held, n, sizeof(*held), by_id);
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = add_live(m, &held[i]);
    free(held);
    return err;
}

static int on_collect(void *ctx, uint64_t dt_us, uint64_t obj_id)
{
    struct mt_profile *m = ctx;
    struct mt_live_obj o;
    if (!mt_live_take(&m->live, obj_id, &o))
        return 0; /* collected twice, or never seen: memtrace ignores it too */
    int err = mt_heap_track_add(&m->heap, dt_us * 1000, -(int64_t)(o.words * m->word_bytes));
    /* a block of the window collected after its end was held at it */
    if (err || o.node == UINT32_MAX || dt_us * 1000 < m->to_ns)
        return err;
    return add_live(m, &o);
}

static int on_skipped(void *ctx, const struct ember_diag *d, bool cut)
{
    struct mt_profile *m = ctx;
    (void)cut;
    m->st->skipped++;
    if (m->o->warn)
        m->o->warn(m->o->warn_ctx, d);
    return 0;
}

static void on_progress(void *ctx)
{
    struct mt_profile *m = ctx;
    if (m->o->progress)
        m->o->progress(m->o->progress_ctx, m->in);
}

static int setup(struct mt_profile *m)
{
    static const char *const source[3] = {"[minor]", "[major]", "[external]"};
    int err = 0;
    for (unsigned v = 0; v < NVALUES && !err; v++)
        err = ember_profile_value(m->p, value_type[v][0], value_type[v][1], &m->value[v]);
    for (unsigned s = 0; s < 3 && !err; s++)
        err = intern_name(m, source[s], &m->source_frame[s]);
    if (!err)
        err = intern_name(m, "[empty backtrace]", &m->empty_frame);
    if (!err)
        err = ember_u64map_init(&m->code);
    if (!err)
        err = mt_live_init(&m->live);
    if (!err)
        err = mt_heap_track_init(&m->heap, m->p);
    if (!err)
        ember_profile_select_index(m->p, m->value[V_SAMPLES]);
    return err;
}

static void release(struct mt_profile *m)
{
    ember_u64map_release(&m->code);
    mt_live_release(&m->live);
    free(m->frames);
    free(m->spans);
    free(m->stack);
    free(m->path.codes);
    free(m->path.nodes);
    free(m->path.code_end);
}

/* The meta's duration: the last event's time. */
static int finish(struct mt_profile *m, const struct mt_stats *ms)
{
    struct ember_profile_meta meta = *ember_profile_meta(m->p);
    meta.duration_nanos = (int64_t)(ms->last_dt_us * 1000);
    int err = mt_heap_track_end(&m->heap);
    if (!err)
        err = add_held(m);
    return err ? err : ember_profile_set_meta(m->p, &meta);
}

static int memtrace_read(struct ember_profile *p, struct ember_input *in,
                         const struct ember_read_opts *o, struct ember_read_stats *st,
                         struct ember_diag *d)
{
    struct mt_profile m = {.p = p,
                           .in = in,
                           .o = o,
                           .st = st,
                           .d = d,
                           .sources = ember_read_opts_flag(o, "memtrace-source"),
                           .from_ns = o->from_ns,
                           .to_ns = o->to_ns ? o->to_ns : UINT64_MAX,
                           .path = {.source = -1}};
    static const struct mt_tool tool = {.info = on_info,
                                        .location = on_location,
                                        .alloc = on_alloc,
                                        .collect = on_collect,
                                        .skipped = on_skipped,
                                        .progress = on_progress};
    struct mt_stats ms;
    int err = setup(&m);
    if (!err)
        err = mt_decode(in, &tool, &m, &ms, d);
    if (!err)
        err = finish(&m, &ms);
    release(&m);
    return err;
}

static enum ember_probe memtrace_probe(const char *data, size_t len)
{
    int r = mt_probe(data, len);
    return r > 0 ? EMBER_PROBE_YES : r < 0 ? EMBER_PROBE_MAYBE : EMBER_PROBE_NO;
}

static const struct ember_format_option memtrace_options[] = {
    {"memtrace-source", EMBER_OPTION_FLAG, NULL, NULL,
     "start each stack with its allocation source: [minor], [major] or [external]"},
    {NULL, 0, NULL, NULL, NULL},
};

const struct ember_format ember_format_memtrace = {
    .name = "memtrace",
    .description = "memtrace's .ctf allocation traces of OCaml programs (format v1-v3); values "
                   "samples, words, bytes and live_samples, live_words, live_bytes",
    .probe = memtrace_probe,
    .read = memtrace_read,
    .options = memtrace_options,
    .options_heading = "memtrace options:",
    .window = true,
};
