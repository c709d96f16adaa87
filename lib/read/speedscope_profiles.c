/*
 * speedscope_profiles.c - speedscope's frames and profiles into the
 * reader's scratch profile: shared.frames as a table of names, evented
 * profiles as frames opened and closed at times, sampled profiles as
 * stacks paired with weights (see speedscope.c for the importer's rules).
 *
 * Invariants: an evented profile's "at" values never decrease and its
 * frames close innermost first; a sampled profile's samples and weights
 * pair one to one, the unpaired leading part of one kept until the other
 * comes.
 */
#include "read/read_impl.h"
#include "read/speedscope_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- frames ---------------------------------------------------------------------- */

int ember_speedscope_frame_end(struct ss_reader *r)
{
    if (!r->fname_set)
        return ember_json_fail(&r->j, "frame %zu has no \"name\" (expected {\"name\": ...})",
                               r->nframes);
    if (r->nframes >= MAX_FRAMES || EMBER_VEC_RESERVE(r->frames, r->fcap, r->nframes + 1) < 0)
        return ember_json_error(&r->j, -ENOMEM);
    r->frames[r->nframes++] =
        (struct frame_name){r->fname, r->fnamelen, r->ffile, r->ffilelen, r->fline, r->fcol};
    r->fname_set = false;
    r->ffile = NULL;
    r->fline = r->fcol = 0;
    return 1;
}

int ember_speedscope_frame_name(struct ss_reader *r, const unsigned char *s, size_t n)
{
    r->fname = ember_arena_strndup(&r->arena, (const char *)s, n);
    if (!r->fname)
        return ember_json_error(&r->j, -ENOMEM);
    ember_json_frame_name(r->fname, n);
    r->fnamelen = n;
    r->fname_set = true;
    return 1;
}

/* The frame of the scratch profile for frame index idx (checked against
 * the table if it is known, else remembered for the check at the end). */
static int frame_of(struct ss_reader *r, int64_t idx, uint32_t *frame)
{
    if (idx < 0 || idx >= MAX_FRAMES || (r->frames_done && (size_t)idx >= r->nframes))
        return ember_json_fail(&r->j,
                               "frame index %lld out of range (expected 0 to %zu, the "
                               "frames of shared.frames)",
                               (long long)idx, r->nframes ? r->nframes - 1 : 0);
    if (!r->frames_done && idx > r->max_index) {
        r->max_index = idx;
        r->max_index_line = ember_json_line(&r->j);
    }
    if (ember_u64map_get(&r->frame_of, (uint64_t)idx, frame))
        return 1;
    /* indices are not trusted with a table's size: a map */
    char num[24];
    int n = snprintf(num, sizeof(num), "%lld", (long long)idx);
    int err = ember_profile_intern(r->t, num, (size_t)n, frame);
    if (!err)
        err = ember_u64map_put(&r->frame_of, (uint64_t)idx, *frame);
    return err ? ember_json_error(&r->j, err) : 1;
}

static const char *frame_label(struct ss_reader *r, int64_t idx, char *buf, size_t size)
{
    if (idx >= 0 && (size_t)idx < r->nframes)
        snprintf(buf, size, "\"%.80s\"", r->frames[idx].s);
    else
        snprintf(buf, size, "#%lld", (long long)idx);
    return buf;
}

/* ---- evented profiles ----------------------------------------------------------- */

static int add_weight(struct ss_reader *r, uint32_t node, ember_fixed w)
{
    struct ember_decimal dec;
    int err = ember_json_decimal(w, &dec);
    if (!err)
        err = ember_profile_add_decimal(r->t, node, 0, dec);
    if (err)
        return ember_json_error(&r->j, err);
    current_profile(r)->weighed = true;
    r->st->samples++;
    return 1;
}

static int open_frame(struct ss_reader *r, int64_t idx)
{
    struct current *c = &r->cur;
    uint32_t frame, node;
    if (!frame_of(r, idx, &frame))
        return 0;
    uint32_t parent = c->nopen ? c->open_node[c->nopen - 1] : current_profile(r)->root;
    int err = ember_profile_child(r->t, parent, frame, &node);
    if (!err && (EMBER_VEC_RESERVE(c->open, c->ocap, c->nopen + 1) < 0 ||
                 EMBER_VEC_RESERVE(c->open_node, c->ncap, c->nopen + 1) < 0))
        err = -ENOMEM;
    if (err)
        return ember_json_error(&r->j, err);
    c->open[c->nopen] = (uint32_t)idx;
    c->open_node[c->nopen++] = node;
    return 1;
}

static int close_frame(struct ss_reader *r, int64_t idx)
{
    struct current *c = &r->cur;
    char a[100], b[100];
    if (c->nopen == 0)
        return ember_json_fail(&r->j,
                               "\"C\" event for frame %s with no frame open (expected an "
                               "\"O\" event before it)",
                               frame_label(r, idx, a, sizeof(a)));
    if (c->open[c->nopen - 1] != idx)
        return ember_json_fail(&r->j,
                               "\"C\" event for frame %s while frame %s is open on top "
                               "(expected frames closed in the reverse order of opening)",
                               frame_label(r, idx, a, sizeof(a)),
                               frame_label(r, c->open[c->nopen - 1], b, sizeof(b)));
    c->nopen--;
    return 1;
}

int ember_speedscope_event_end(struct ss_reader *r)
{
    struct current *c = &r->cur;
    int type = c->ev_type;
    c->ev_type = 0;
    if (!type || !c->ev_has_at || c->ev_frame < 0)
        return ember_json_fail(&r->j,
                               "event without %s (expected {\"type\": \"O\" or \"C\", "
                               "\"at\": NUMBER, \"frame\": INDEX})",
                               !type           ? "\"type\""
                               : !c->ev_has_at ? "\"at\""
                                               : "\"frame\"");
    c->ev_has_at = false;
    if (c->have_at && c->ev_at < c->last_at)
        return ember_json_fail(&r->j, "event at a value before the previous event's (expected "
                                      "\"at\" values that never decrease)");
    if (c->have_at && c->nopen && c->ev_at > c->last_at &&
        !add_weight(r, c->open_node[c->nopen - 1], c->ev_at - c->last_at))
        return 0;
    c->last_at = c->ev_at;
    c->have_at = true;
    int64_t idx = c->ev_frame;
    c->ev_frame = -1;
    return type == 'O' ? open_frame(r, idx) : close_frame(r, idx);
}

int ember_speedscope_events_end(struct ss_reader *r)
{
    struct current *c = &r->cur;
    char a[100];
    if (c->nopen)
        return ember_json_fail(&r->j,
                               "frame %s is still open at the end of the events "
                               "(expected a \"C\" event for every \"O\")",
                               frame_label(r, c->open[c->nopen - 1], a, sizeof(a)));
    return 1;
}

/* ---- sampled profiles ------------------------------------------------------------ */

/* Pairs samples and weights while both have unpaired entries. */
static int pair(struct ss_reader *r)
{
    struct current *c = &r->cur;
    while (c->lhead < c->nleaves && c->whead < c->nweights) {
        ember_fixed w = c->wbuf[c->whead++];
        uint32_t leaf = c->leaves[c->lhead++];
        if (w < 0)
            return ember_json_fail(&r->j, "negative weight (expected weights of 0 or more)");
        if (w > 0 && leaf != current_profile(r)->root && !add_weight(r, leaf, w))
            return 0;
    }
    if (c->lhead == c->nleaves)
        c->lhead = c->nleaves = 0;
    if (c->whead == c->nweights)
        c->whead = c->nweights = 0;
    return 1;
}

int ember_speedscope_sample_frame(struct ss_reader *r, int64_t idx)
{
    uint32_t frame;
    if (!frame_of(r, idx, &frame))
        return 0;
    int err = ember_profile_child(r->t, r->cur.node, frame, &r->cur.node);
    return err ? ember_json_error(&r->j, err) : 1;
}

int ember_speedscope_sample_end(struct ss_reader *r)
{
    struct current *c = &r->cur;
    if (EMBER_VEC_RESERVE(c->leaves, c->lcap, c->nleaves + 1) < 0)
        return ember_json_error(&r->j, -ENOMEM);
    c->leaves[c->nleaves++] = c->node;
    c->nsamples++;
    return pair(r);
}

int ember_speedscope_weight(struct ss_reader *r, ember_fixed w)
{
    struct current *c = &r->cur;
    if (EMBER_VEC_RESERVE(c->wbuf, c->wcap, c->nweights + 1) < 0)
        return ember_json_error(&r->j, -ENOMEM);
    c->wbuf[c->nweights++] = w;
    c->nweights_total++;
    return pair(r);
}

/* ---- profiles ----------------------------------------------------------------------- */

int ember_speedscope_profile_start(struct ss_reader *r)
{
    if (EMBER_VEC_RESERVE(r->profiles, r->pcap, r->nprofiles + 1) < 0)
        return ember_json_error(&r->j, -ENOMEM);
    struct ss_profile *sp = &r->profiles[r->nprofiles];
    *sp = (struct ss_profile){0};
    char name[24];
    uint32_t frame;
    int n = snprintf(name, sizeof(name), "%c%zu", EMBER_JSON_PLACEHOLDER, r->nprofiles);
    int err = ember_profile_intern(r->t, name, (size_t)n, &frame);
    if (!err)
        err = ember_profile_child(r->t, EMBER_ROOT, frame, &sp->root);
    if (err)
        return ember_json_error(&r->j, err);
    r->nprofiles++;
    struct current *c = &r->cur;
    c->type = T_UNKNOWN;
    c->events = c->samples = c->weights = c->have_at = false;
    c->nopen = c->lhead = c->nleaves = c->whead = c->nweights = 0;
    c->nsamples = c->nweights_total = 0;
    c->ev_type = 0;
    c->ev_frame = -1;
    return 1;
}

int ember_speedscope_profile_end(struct ss_reader *r)
{
    struct current *c = &r->cur;
    if (c->type == T_UNKNOWN)
        return ember_json_fail(&r->j, "profile without a \"type\" (expected \"evented\" or "
                                      "\"sampled\")");
    if (c->type == T_EVENTED && (!c->events || c->samples || c->weights))
        return ember_json_fail(&r->j, "evented profile %s (expected \"events\" and no samples)",
                               c->events ? "with samples or weights" : "without \"events\"");
    if (c->type == T_SAMPLED && (!c->samples || !c->weights || c->events))
        return ember_json_fail(&r->j,
                               "sampled profile without %s (expected \"samples\" and "
                               "\"weights\", and no events)",
                               !c->samples   ? "\"samples\""
                               : !c->weights ? "\"weights\""
                                             : "events");
    if (c->nsamples != c->nweights_total)
        return ember_json_fail(&r->j,
                               "%llu samples but %llu weights (expected one weight per "
                               "sample)",
                               (unsigned long long)c->nsamples,
                               (unsigned long long)c->nweights_total);
    return 1;
}

int ember_speedscope_profile_string(struct ss_reader *r, enum key k, const unsigned char *s,
                                    size_t n)
{
    struct current *c = &r->cur;
    if (k == K_TYPE) {
        if (is(s, n, "evented"))
            c->type = T_EVENTED;
        else if (is(s, n, "sampled"))
            c->type = T_SAMPLED;
        else
            return ember_json_fail(&r->j,
                                   "profile type \"%.*s\" (expected \"evented\" or "
                                   "\"sampled\")",
                                   (int)(n > 40 ? 40 : n), (const char *)s);
    } else if (k == K_UNIT) {
        snprintf(current_profile(r)->unit, sizeof(current_profile(r)->unit), "%.*s",
                 (int)(n < 15 ? n : 15), (const char *)s);
    } else if (k == K_NAME) {
        struct ss_profile *sp = current_profile(r);
        sp->name = ember_arena_strndup(&r->arena, (const char *)s, n);
        sp->namelen = n;
        if (!sp->name)
            return ember_json_error(&r->j, -ENOMEM);
        ember_json_frame_name(sp->name, n);
    }
    return 1;
}
