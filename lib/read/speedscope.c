/*
 * speedscope.c - speedscope's file format (https://www.speedscope.app/
 * file-format-schema.json), evented and sampled profiles, by the rules of
 * speedscope's importer:
 * - shared.frames is one table for every profile; a frame is its name here
 *   (file, line and col are not part of a folded stack);
 * - evented: "O"/"C" events at "at" values that never decrease; the time
 *   between two events is the self weight of the innermost open frame; a
 *   "C" must close the innermost open frame, and none may stay open;
 * - sampled: samples[i] is a stack, root first, weighing weights[i]; the two
 *   arrays have one length; a weight 0 adds nothing, a negative one is an
 *   error; an empty stack weighs nothing (speedscope shows it as a gap);
 * - weights are exact decimals in the profile's unit;
 * - with several profiles that have weights, each gets a root frame named
 *   after it (ember has one profile); a single one is read as it is.
 * Any key order is read: a file may give its profiles before shared.frames.
 * A file cut short (not closed) is an error saying where it ends.
 * The stacks are built in one scratch profile whose frames are named by
 * their index, each profile under a placeholder frame; indices become
 * names, and placeholders root frames (or nothing), when the file has been
 * read (ember_profile_merge_renamed).
 *
 * Memory: the frame table, the scratch profile (distinct stacks), the open
 * frames of an evented profile, and for a sampled profile the leading part
 * of whichever of samples and weights comes first (4 bytes per sample, or
 * 16 per weight) until the other arrives. Nothing else grows with the
 * input.
 *
 * This file follows the JSON's structure (yajl's callbacks) and makes the
 * result; speedscope_profiles.c reads the frames and the profiles.
 */
#include "read/read_impl.h"
#include "read/speedscope_impl.h"
#include "base/diag.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

static enum ctx here(const struct ss_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 ? C_NONE : d <= MAX_DEPTH ? r->ctx[d - 1] : C_SKIP;
}

static enum key here_key(const struct ss_reader *r)
{
    unsigned d = r->j.depth;
    return d == 0 || d > MAX_DEPTH ? K_OTHER : r->key[d - 1];
}

/* A frame index as a JSON number. */
static bool index_value(const char *s, size_t n, int64_t *idx)
{
    ember_fixed v;
    ember_fixed unit = 1000000000;
    if (!ember_json_fixed(s, n, &v) || v % unit != 0 || v < 0 || v / unit >= MAX_FRAMES)
        return false;
    *idx = (int64_t)(v / unit);
    return true;
}
/* ---- yajl callbacks ---------------------------------------------------------------- */

static int not_a_number(struct ss_reader *r, const char *what)
{
    return ember_json_fail(&r->j, "expected a number for %s", what);
}

static int on_number(void *ctx, const char *s, size_t n)
{
    struct ss_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    ember_fixed v;
    int64_t idx;
    if (c == C_SAMPLE)
        return index_value(s, n, &idx) ? ember_speedscope_sample_frame(r, idx)
                                       : not_a_number(r, "a frame index in \"samples\"");
    if (c == C_WEIGHTS)
        return ember_json_fixed(s, n, &v) ? ember_speedscope_weight(r, v)
                                          : not_a_number(r, "a weight");
    if (c == C_FRAME && (k == K_LINE || k == K_COL)) { /* a place: kept when it is one */
        int64_t v;
        if (index_value(s, n, &v) && v > 0 && v <= UINT32_MAX)
            *(k == K_LINE ? &r->fline : &r->fcol) = (uint32_t)v;
        return 1;
    }
    if (c == C_EVENT && k == K_AT) {
        r->cur.ev_has_at = ember_json_fixed(s, n, &r->cur.ev_at);
        return r->cur.ev_has_at ? 1 : not_a_number(r, "\"at\"");
    }
    if (c == C_EVENT && k == K_FRAME)
        return index_value(s, n, &r->cur.ev_frame) ? 1 : not_a_number(r, "an event's \"frame\"");
    return 1;
}

static int on_string(void *ctx, const unsigned char *s, size_t n)
{
    struct ss_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = here_key(r);
    if (c == C_FRAME && k == K_NAME)
        return ember_speedscope_frame_name(r, s, n);
    if (c == C_FRAME && k == K_FILE) {
        r->ffile = ember_arena_strndup(&r->arena, (const char *)s, n);
        r->ffilelen = n;
        return r->ffile ? 1 : ember_json_error(&r->j, -ENOMEM);
    }
    if (c == C_PROFILE)
        return ember_speedscope_profile_string(r, k, s, n);
    if (c == C_EVENT && k == K_TYPE) {
        if (!is(s, n, "O") && !is(s, n, "C"))
            return ember_json_fail(&r->j, "event type \"%.*s\" (expected \"O\" or \"C\")",
                                   (int)(n > 20 ? 20 : n), (const char *)s);
        r->cur.ev_type = s[0];
        return 1;
    }
    if (c == C_SAMPLE || c == C_WEIGHTS || (c == C_EVENT && (k == K_AT || k == K_FRAME)))
        return not_a_number(r, c == C_WEIGHTS ? "a weight" : "a frame index or \"at\"");
    if (c == C_NONE)
        return ember_json_fail(&r->j, "expected a speedscope file: {\"$schema\": ..., "
                                      "\"shared\": {\"frames\": [...]}, \"profiles\": [...]}");
    return 1;
}

static int on_scalar(void *ctx)
{
    struct ss_reader *r = ctx;
    enum ctx c = here(r);
    if (c == C_SAMPLE || c == C_WEIGHTS || c == C_NONE)
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
    struct ss_reader *r = ctx;
    enum ctx c = here(r);
    enum key k = K_OTHER;
    if (c == C_TOP)
        k = is(s, n, "shared") ? K_SHARED : is(s, n, "profiles") ? K_PROFILES : K_OTHER;
    else if (c == C_SHARED)
        k = is(s, n, "frames") ? K_FRAMES : K_OTHER;
    else if (c == C_FRAME)
        k = is(s, n, "name")   ? K_NAME
            : is(s, n, "file") ? K_FILE
            : is(s, n, "line") ? K_LINE
            : is(s, n, "col")  ? K_COL
                               : K_OTHER;
    else if (c == C_PROFILE)
        k = is(s, n, "type")      ? K_TYPE
            : is(s, n, "name")    ? K_NAME
            : is(s, n, "events")  ? K_EVENTS
            : is(s, n, "samples") ? K_SAMPLES
            : is(s, n, "weights") ? K_WEIGHTS
            : is(s, n, "unit")    ? K_UNIT
                                  : K_OTHER;
    else if (c == C_EVENT)
        k = is(s, n, "type")    ? K_TYPE
            : is(s, n, "at")    ? K_AT
            : is(s, n, "frame") ? K_FRAME
                                : K_OTHER;
    if (r->j.depth > 0 && r->j.depth <= MAX_DEPTH)
        r->key[r->j.depth - 1] = k;
    return 1;
}

/* The context of a container opened here (map or array). */
static enum ctx child(struct ss_reader *r, bool map)
{
    enum ctx c = here(r);
    enum key k = here_key(r);
    switch (c) {
    case C_NONE:
        return map ? C_TOP : C_SKIP;
    case C_TOP:
        return k == K_SHARED && map ? C_SHARED : k == K_PROFILES && !map ? C_PROFILES : C_SKIP;
    case C_SHARED:
        return k == K_FRAMES && !map ? C_FRAMES : C_SKIP;
    case C_FRAMES:
        return map ? C_FRAME : C_SKIP;
    case C_PROFILES:
        return map ? C_PROFILE : C_SKIP;
    case C_PROFILE:
        if (map)
            return C_SKIP;
        return k == K_EVENTS    ? C_EVENTS
               : k == K_SAMPLES ? C_SAMPLES
               : k == K_WEIGHTS ? C_WEIGHTS
                                : C_SKIP;
    case C_EVENTS:
        return map ? C_EVENT : C_SKIP;
    case C_SAMPLES:
        return map ? C_SKIP : C_SAMPLE;
    default:
        return C_SKIP;
    }
}

/* Containers where the file says something else. */
static int misplaced(struct ss_reader *r, enum ctx parent, enum ctx c, bool map)
{
    if (parent == C_NONE && !map)
        return ember_json_fail(&r->j, "expected a speedscope file: a JSON object with "
                                      "\"shared\" and \"profiles\", not an array");
    if (c == C_SKIP && (parent == C_FRAMES || parent == C_PROFILES || parent == C_EVENTS ||
                        parent == C_SAMPLES || parent == C_SAMPLE || parent == C_WEIGHTS))
        return ember_json_fail(&r->j, "unexpected %s in %s", map ? "object" : "array",
                               parent == C_FRAMES     ? "shared.frames (expected frame objects)"
                               : parent == C_PROFILES ? "profiles (expected profile objects)"
                               : parent == C_EVENTS   ? "events (expected event objects)"
                               : parent == C_SAMPLES  ? "samples (expected arrays of frame indices)"
                                                      : "a list of numbers");
    return 1;
}

static int open_container(struct ss_reader *r, bool map)
{
    enum ctx parent = here(r), c = child(r, map);
    if (!misplaced(r, parent, c, map))
        return 0;
    ember_json_begin(&r->j, map);
    if (r->j.depth <= MAX_DEPTH) {
        r->ctx[r->j.depth - 1] = c;
        r->key[r->j.depth - 1] = K_OTHER;
    }
    if (c == C_TOP)
        r->top_seen = true;
    if (c == C_PROFILE)
        return ember_speedscope_profile_start(r);
    if (c == C_EVENTS)
        r->cur.events = true;
    if (c == C_SAMPLES)
        r->cur.samples = true;
    if (c == C_WEIGHTS)
        r->cur.weights = true;
    if (c == C_SAMPLE)
        r->cur.node = current_profile(r)->root;
    if (c == C_FRAMES)
        r->nframes = 0;
    return 1;
}

static int close_container(struct ss_reader *r)
{
    enum ctx c = here(r);
    int ok = 1;
    if (c == C_FRAME)
        ok = ember_speedscope_frame_end(r);
    else if (c == C_FRAMES)
        r->frames_done = true;
    else if (c == C_EVENT)
        ok = ember_speedscope_event_end(r);
    else if (c == C_EVENTS)
        ok = ember_speedscope_events_end(r);
    else if (c == C_SAMPLE)
        ok = ember_speedscope_sample_end(r);
    else if (c == C_PROFILE)
        ok = ember_speedscope_profile_end(r);
    ember_json_end(&r->j);
    return ok;
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

/* ---- the result ------------------------------------------------------------------ */

/* Frames named by their index take their names; a profile's placeholder
 * becomes its root frame when several profiles have weights, and goes
 * otherwise. */
static int rename_frame(void *ctx, struct ember_frame *fr)
{
    struct ss_reader *r = ctx;
    if (fr->name_len > 0 && fr->name[0] == EMBER_JSON_PLACEHOLDER) {
        size_t k = strtoul(fr->name + 1, NULL, 10), weighed = 0;
        for (size_t i = 0; i < r->nprofiles; i++)
            weighed += r->profiles[i].weighed;
        if (weighed < 2 || k >= r->nprofiles) {
            fr->name = NULL;
        } else if (r->profiles[k].name) {
            fr->name = r->profiles[k].name;
            fr->name_len = r->profiles[k].namelen;
        } else {
            fr->name_len = (size_t)snprintf(r->label, sizeof(r->label), "profile %zu", k + 1);
            fr->name = r->label;
        }
        return 0;
    }
    unsigned long idx = strtoul(fr->name, NULL, 10);
    if (idx >= r->nframes)
        return -EINVAL; /* checked before grafting */
    const struct frame_name *f = &r->frames[idx];
    fr->name = f->s;
    fr->name_len = f->len;
    fr->file = f->file; /* where speedscope's frame says it is */
    fr->file_len = f->file ? f->file_len : 0;
    fr->line = f->line;
    fr->column = f->col;
    return 0;
}

/* What the weights measure, for the writers that say it: the unit of the
 * first profile with weights ("none" is a count, the default). */
static void set_unit(struct ss_reader *r)
{
    static const char *const times[] = {"nanoseconds", "microseconds", "milliseconds", "seconds"};
    for (size_t i = 0; i < r->nprofiles; i++) {
        const char *unit = r->profiles[i].unit;
        if (!r->profiles[i].weighed)
            continue;
        for (size_t k = 0; k < sizeof(times) / sizeof(times[0]); k++)
            if (strcmp(unit, times[k]) == 0)
                ember_profile_set_unit(r->p, "time", unit);
        if (strcmp(unit, "bytes") == 0)
            ember_profile_set_unit(r->p, "space", "bytes");
        return;
    }
}

/* Where an input cut short ends: the innermost part that means something,
 * in r->label. */
static const char *cut_inside(struct ss_reader *r)
{
    static const struct {
        enum ctx c;
        const char *what;
    } parts[] = {{C_FRAMES, "shared.frames"}, {C_EVENTS, "the events"},
                 {C_SAMPLES, "the samples"},  {C_WEIGHTS, "the weights"},
                 {C_PROFILE, "the object"},   {C_PROFILES, "\"profiles\""},
                 {C_SHARED, "\"shared\""},    {C_TOP, "the top-level object"}};
    for (unsigned d = r->j.depth < MAX_DEPTH ? r->j.depth : MAX_DEPTH; d-- > 0;) {
        for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
            if (parts[i].c != r->ctx[d])
                continue;
            bool of_profile = r->nprofiles && (r->ctx[d] == C_EVENTS || r->ctx[d] == C_SAMPLES ||
                                               r->ctx[d] == C_WEIGHTS || r->ctx[d] == C_PROFILE);
            if (!of_profile)
                return parts[i].what;
            snprintf(r->label, sizeof(r->label), "%s of profile %zu", parts[i].what, r->nprofiles);
            return r->label;
        }
    }
    return "a JSON value";
}

static int finish(struct ss_reader *r, struct ember_diag *d)
{
    const char *file = r->j.file;
    if (r->j.truncated)
        return ember_json_truncated(&r->j, cut_inside(r));
    if (!r->top_seen || !r->nprofiles)
        return ember_diag_set(d, -EINVAL, file, 1,
                              "no profiles (expected a speedscope file: {\"$schema\": ..., "
                              "\"shared\": {\"frames\": [...]}, \"profiles\": [...]})");
    if (r->max_index >= 0 && !r->frames_done)
        return ember_diag_set(d, -EINVAL, file, r->max_index_line,
                              "frame index %lld used, but the file has no shared.frames "
                              "(expected {\"shared\": {\"frames\": [{\"name\": ...}, ...]}})",
                              (long long)r->max_index);
    if (r->max_index >= 0 && (size_t)r->max_index >= r->nframes)
        return ember_diag_set(d, -EINVAL, file, r->max_index_line,
                              "frame index %lld out of range (expected an index into "
                              "shared.frames, which has %zu frames)",
                              (long long)r->max_index, r->frames_done ? r->nframes : 0);
    int err = ember_profile_merge_renamed(r->p, r->t, rename_frame, r);
    if (err == -ERANGE)
        return ember_diag_set(d, err, file, 0, "weights overflow a 64-bit total");
    if (!err)
        set_unit(r);
    return err;
}

static void release(struct ss_reader *r)
{
    ember_profile_free(r->t);
    ember_u64map_release(&r->frame_of);
    free(r->profiles);
    free(r->frames);
    free(r->cur.open);
    free(r->cur.open_node);
    free(r->cur.leaves);
    free(r->cur.wbuf);
    ember_arena_release(&r->arena);
}

static int speedscope_read(struct ember_profile *p, struct ember_input *in,
                           const struct ember_read_opts *o, struct ember_read_stats *st,
                           struct ember_diag *d)
{
    struct ss_reader *r = calloc(1, sizeof(*r));
    if (!r)
        return -ENOMEM;
    r->p = p;
    r->st = st;
    r->max_index = -1;
    r->j = (struct ember_json){.in = in, .file = ember_input_name(in), .d = d, .o = o};
    ember_arena_init(&r->arena);
    r->t = ember_profile_new();
    int err = r->t ? ember_u64map_init(&r->frame_of) : -ENOMEM;
    if (!err && ember_profile_has_sequence(p))
        ember_profile_keep_sequence(r->t, true);
    if (!err)
        err = ember_json_parse(&r->j, &callbacks, r);
    if (!err)
        err = finish(r, d);
    release(r);
    free(r);
    return err;
}

/* Do the bytes end inside a "$schema" value that begins as speedscope's? */
static bool ends_in_schema(const char *data, size_t len)
{
    static const char url[] = "https://www.speedscope.app/file-format-schema.json";
    const char *k = memmem(data, len, "\"$schema\"", 9);
    if (!k)
        return false;
    size_t i = (size_t)(k - data) + 9;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len || data[i++] != ':')
        return false;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len || data[i++] != '"')
        return false;
    return len - i < sizeof(url) - 1 && memcmp(data + i, url, len - i) == 0;
}

/* A JSON object naming speedscope's schema or written by speedscope, or
 * holding "profiles" and "shared" (the schema may come last). */
static enum ember_probe speedscope_probe(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
        i++;
    if (i == len || data[i] != '{')
        return EMBER_PROBE_NO;
    if (memmem(data, len, "speedscope.app/file-format-schema", 33) ||
        memmem(data, len, "\"speedscope@", 12))
        return EMBER_PROBE_YES;
    if (ends_in_schema(data, len))
        return EMBER_PROBE_MAYBE; /* a file cut short: the reader says so */
    if (memmem(data, len, "\"profiles\"", 10) &&
        (memmem(data, len, "\"shared\"", 8) || memmem(data, len, "\"evented\"", 9) ||
         memmem(data, len, "\"sampled\"", 9)))
        return EMBER_PROBE_YES;
    return EMBER_PROBE_NO;
}

const struct ember_format ember_format_speedscope = {
    .name = "speedscope",
    .description = "speedscope JSON (evented and sampled profiles)",
    .probe = speedscope_probe,
    .read = speedscope_read,
};
