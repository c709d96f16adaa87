/*
 * profile_merge_frames.c - the frames of threads' profiles merged on
 * several threads (profile_merge.c says why and the order to reach; the
 * nodes' merge, profile_merge_nodes.c, takes the same steps). Each thread
 * has nearly every frame where the frames are addresses (perf.data's
 * --addrs and pprof's locations: 97 thousand in the sources of a 4 M
 * sample read on 4 threads, for 35 thousand in the result), and copying
 * them one after the other, a hash and a lookup each, was the largest
 * serial part left after the records.
 *
 * A source frame is keyed as dst keys it: its module dst's (mods), its
 * file and system name dst's copies (found once per source, before the
 * threads), its hash dst's. Then, as the nodes do:
 *   1. every source frame not already in dst claims its key's slot in one
 *      shared table, leaving there the largest of ~(piece rank << 32 |
 *      frame): the slot keeps the frame the input met first;
 *   2. each piece counts the frames that kept their slots, new in it;
 *   3. (the caller) each piece's first number: dst's frame count plus the
 *      new frames of the pieces before;
 *   4. every source frame learns its number; the new ones are written in
 *      place, a name alone's bytes copied into its source's arena (dst
 *      takes them over), a frame with a loc sharing the bytes of its name
 *      alone's frame (as dst makes them: that frame is in the source
 *      before it, so it is numbered by then);
 *   5. (the caller) the new frames placed in dst's table.
 * Invariants: a source's frames are distinct in dst's terms too (its
 * modules and files map one to one); dst's table is only read until step
 * 3 grows it, and only the caller writes it after; a table too full for
 * a claim sends every frame to the serial path, dst's frames untouched.
 */
#include "model/profile_merge_impl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A source's string (file or system name) and dst's copy of it. */
struct merge_file {
    const char *src, *dst;
};

/* A key's slot: key 0 is free, else TAKEN | source << 32 | frame; first
 * is ~(rank << 32 | frame) of the frame that keeps it (step 1), then its
 * number in dst (step 3 on). */
struct frame_slot {
    uint64_t key;
    uint64_t first;
};

#define TAKEN (1ull << 63)

struct fmerge {
    struct merge_crew crew;
    struct ember_profile *dst;
    struct merge_source *s;
    unsigned n;
    struct merge_plan plan; /* of frames */
    struct frame_slot *t;
    uint32_t mask;
    uint64_t *hash; /* each new frame's, by its number - before */
};

/* The first frame s made in its piece j (its last is marks[j].frames - 1). */
static uint32_t piece_start(const struct merge_source *s, size_t j)
{
    return j ? s->marks[j - 1].frames : 0;
}

/* Each frame k that s made in its piece j, in s's order. */
#define FOR_EACH_FRAME(s, j, k)                                                                    \
    for (size_t j = 0; j < (s)->nmarks; j++)                                                       \
        for (uint32_t k = piece_start(s, j); k < (s)->marks[j].frames; k++)

static uint32_t marked(const struct merge_source *s)
{
    return s->nmarks ? s->marks[s->nmarks - 1].frames : 0;
}

static int by_src(const void *a, const void *b)
{
    const struct merge_file *x = a, *y = b;
    return x->src < y->src ? -1 : x->src > y->src;
}

/* dst's copy of the source's string p (one of its files' interned). */
static const char *dst_string(const struct merge_source *s, const char *p)
{
    struct merge_file key = {.src = p};
    const struct merge_file *f = bsearch(&key, s->files, s->nfiles, sizeof(key), by_src);
    return f ? f->dst : p;
}

/* Frame k of s as dst keys it: its loc (NULL: a name alone) in *loc. */
static const struct ember_frame_loc *dst_loc(const struct merge_source *s, uint32_t k,
                                             struct ember_frame_loc *loc)
{
    *loc = s->p->frames.loc[k];
    if (!loc->detailed)
        return NULL;
    if (loc->module != EMBER_NO_MODULE)
        loc->module = s->mods[loc->module];
    if (loc->file)
        loc->file = dst_string(s, loc->file);
    if (loc->system_name)
        loc->system_name = dst_string(s, loc->system_name);
    return loc;
}

/* The caller's, first: dst's copies of each source's strings. */
static int map_files(struct ember_profile *dst, struct merge_source *s)
{
    const struct ember_strmap *files = &s->p->frames.files;
    if (!files->count)
        return 0;
    if (!(s->files = malloc(files->count * sizeof(*s->files))))
        return -ENOMEM;
    for (uint32_t i = 0; i <= files->mask; i++) {
        const struct strmap_slot *e = &files->slots[i];
        if (!e->key)
            continue;
        const char *copy = ember_frames_keep(&dst->frames, e->key, e->len);
        if (!copy)
            return -ENOMEM;
        s->files[s->nfiles++] = (struct merge_file){e->value, copy};
    }
    qsort(s->files, s->nfiles, sizeof(*s->files), by_src);
    return 0;
}

/* Step 0: s's frames' hashes in dst. */
static int hash_source(struct fmerge *m, struct merge_source *s)
{
    (void)m;
    const struct ember_frames *f = &s->p->frames;
    struct ember_frame_loc loc;
    for (uint32_t k = 0; k < marked(s); k++)
        s->fhash[k] = ember_frames_hash(f->str[k], f->len[k], dst_loc(s, k, &loc));
    return 0;
}

/* Whether frame k of s and frame y of source x are one in dst. */
static bool same_frame(const struct merge_source *s, uint32_t k, const struct merge_source *x,
                       uint32_t y)
{
    const struct ember_frames *a = &s->p->frames, *b = &x->p->frames;
    if (s->fhash[k] != x->fhash[y] || a->len[k] != b->len[y] ||
        memcmp(a->str[k], b->str[y], a->len[k]) != 0)
        return false;
    struct ember_frame_loc la, lb;
    const struct ember_frame_loc *pa = dst_loc(s, k, &la), *pb = dst_loc(x, y, &lb);
    return !pa == !pb && (!pa || ember_frame_loc_same(pa, pb));
}

/* The slot of frame k of s (source i), claimed if nobody has; NO_SLOT if
 * the table is too full. */
static uint32_t claim(struct fmerge *m, unsigned i, uint32_t k)
{
    enum { PROBES = 4096 };
    uint64_t h = m->s[i].fhash[k], key = TAKEN | (uint64_t)i << 32 | k;
    for (uint32_t at = (uint32_t)h & m->mask, n = 0; n < PROBES; at = (at + 1) & m->mask, n++) {
        uint64_t cur = __atomic_load_n(&m->t[at].key, __ATOMIC_ACQUIRE);
        if (cur == 0 && __atomic_compare_exchange_n(&m->t[at].key, &cur, key, false,
                                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
            return at;
        if (same_frame(&m->s[i], k, &m->s[(cur & ~TAKEN) >> 32], (uint32_t)cur))
            return at;
    }
    return NO_SLOT;
}

/* Step 1: s's frames found in dst, or their slots claimed. */
static int claim_source(struct fmerge *m, struct merge_source *s)
{
    const struct ember_frames *f = &s->p->frames, *d = &m->dst->frames;
    unsigned i = (unsigned)(s - m->s);
    struct ember_frame_loc loc;
    FOR_EACH_FRAME(s, j, k)
    {
        s->frames[k] = m->plan.before ? ember_frames_find(d, f->str[k], f->len[k],
                                                          dst_loc(s, k, &loc), s->fhash[k])
                                      : UINT32_MAX;
        if (s->frames[k] != UINT32_MAX) {
            s->fslot[k] = NO_SLOT; /* dst's own */
            continue;
        }
        if ((s->fslot[k] = claim(m, i, k)) == NO_SLOT)
            return 1; /* the table is full: the serial path */
        ember_merge_keep_first(&m->t[s->fslot[k]].first, ~((uint64_t)s->rank[j] << 32 | k));
    }
    return 0;
}

/* Step 2: the frames that kept their slots, counted per piece. */
static int count_source(struct fmerge *m, struct merge_source *s)
{
    FOR_EACH_FRAME(s, j, k)
    {
        if (s->fslot[k] != NO_SLOT &&
            m->t[s->fslot[k]].first == ~((uint64_t)s->rank[j] << 32 | k)) {
            s->fslot[k] |= OWNED;
            m->plan.count[s->rank[j]]++;
        }
    }
    return 0;
}

/* Step 3, the caller's: each piece's first number, room for them all (a
 * call of its own, that profiles count it serial: bench/perfdata_phases.py). */
__attribute__((noinline)) static int plan_frames(struct fmerge *m)
{
    int err = ember_merge_number_pieces(&m->plan, UINT32_MAX / 2);
    if (err)
        return err;
    m->hash = malloc(((size_t)m->plan.added + 1) * sizeof(*m->hash));
    if (!m->hash ||
        ember_frames_reserve(&m->dst->frames, (size_t)m->plan.before + m->plan.added) < 0)
        return -ENOMEM;
    return 0;
}

/* Step 3: the new frames numbered, in their slots for the other sources
 * and in s's map. */
static int number_source(struct fmerge *m, struct merge_source *s)
{
    FOR_EACH_FRAME(s, j, k)
    {
        if (s->fslot[k] != NO_SLOT && (s->fslot[k] & OWNED))
            m->t[s->fslot[k] & ~OWNED].first = s->frames[k] = m->plan.count[s->rank[j]]++;
    }
    return 0;
}

/* Step 4: every frame's number; the new ones written, those with a loc
 * but for their name's bytes (name_source). */
static int fill_source(struct fmerge *m, struct merge_source *s)
{
    const struct ember_frames *f = &s->p->frames;
    struct ember_frames *d = &m->dst->frames;
    for (uint32_t k = 0; k < marked(s); k++) {
        if (s->fslot[k] == NO_SLOT)
            continue;
        if (!(s->fslot[k] & OWNED)) {
            s->frames[k] = (uint32_t)m->t[s->fslot[k]].first;
            continue;
        }
        uint32_t g = s->frames[k];
        const struct ember_frame_loc *loc = dst_loc(s, k, &d->loc[g]);
        d->len[g] = f->len[k];
        d->tag[g] = ember_frame_tag(s->fhash[k], loc != NULL);
        m->hash[g - m->plan.before] = s->fhash[k];
        d->str[g] = loc ? NULL : ember_arena_strndup(&s->names, f->str[k], f->len[k]);
        if (!loc && !d->str[g])
            return -ENOMEM;
        if (!loc)
            memset(&d->loc[g], 0, sizeof(d->loc[g]));
        s->new_detailed |= loc != NULL;
    }
    return 0;
}

/* Step 4: s's new frames with a loc share the bytes of their name alone's
 * frame, which s made before them. */
static int name_source(struct fmerge *m, struct merge_source *s)
{
    const struct ember_frames *f = &s->p->frames;
    struct ember_frames *d = &m->dst->frames;
    for (uint32_t k = 0; k < marked(s) && s->new_detailed; k++) {
        if (s->fslot[k] == NO_SLOT || !(s->fslot[k] & OWNED) || d->str[s->frames[k]])
            continue;
        uint64_t h = ember_frames_hash(f->str[k], f->len[k], NULL);
        uint32_t plain = ember_frames_find(f, f->str[k], f->len[k], NULL, h);
        if (plain >= k)
            return -EINVAL; /* a frame with a loc is made after its name alone's */
        d->str[s->frames[k]] = d->str[s->frames[plain]];
    }
    return 0;
}

/* Step 5, the caller's: the names taken over, the new frames placed. */
static void finish_frames(struct fmerge *m)
{
    struct ember_frames *d = &m->dst->frames;
    for (unsigned i = 0; i < m->n; i++) {
        ember_arena_adopt(&d->names, &m->s[i].names);
        d->detailed |= m->s[i].new_detailed;
        m->s[i].done.frames = marked(&m->s[i]);
    }
    ember_frames_place_new(d, m->plan.added, m->hash);
}

/* Thread t's sources, t, t + threads, ..., through a step (its failure
 * kept), then the others awaited. */
static void each_source(struct fmerge *m, unsigned t,
                        int (*step)(struct fmerge *m, struct merge_source *s))
{
    for (unsigned i = t; i < m->n && !ember_crew_failed(&m->crew); i += m->crew.threads)
        ember_crew_fail(&m->crew, step(m, &m->s[i]));
    pthread_barrier_wait(&m->crew.bar);
}

static void run(void *ctx, unsigned t)
{
    struct fmerge *m = ctx;
    each_source(m, t, hash_source);
    each_source(m, t, claim_source);
    each_source(m, t, count_source);
    if (t == 0 && !ember_crew_failed(&m->crew))
        ember_crew_fail(&m->crew, plan_frames(m));
    pthread_barrier_wait(&m->crew.bar);
    if (ember_crew_failed(&m->crew))
        return;
    each_source(m, t, number_source);
    each_source(m, t, fill_source);
    each_source(m, t, name_source);
}

/* The table: twice as many slots as the frames dst may end with, at most
 * twice the largest source's (as profile_merge.c's frames_expected). */
static int merge_init(struct fmerge *m)
{
    uint64_t sum = 0, most = 0, slots = 1024;
    for (unsigned i = 0; i < m->n; i++) {
        struct merge_source *s = &m->s[i];
        uint32_t k = marked(s);
        int err = map_files(m->dst, s);
        s->fhash = malloc(((size_t)k + 1) * sizeof(*s->fhash));
        s->fslot = malloc(((size_t)k + 1) * sizeof(*s->fslot));
        if (err || !s->fhash || !s->fslot)
            return err ? err : -ENOMEM;
        ember_arena_init(&s->names);
        sum += k;
        most = k > most ? k : most;
    }
    uint64_t need = sum < 2 * most ? sum : 2 * most;
    while (slots < 2 * need)
        slots *= 2;
    if (slots > (1ull << 31))
        return 1;
    m->mask = (uint32_t)(slots - 1);
    m->t = calloc(slots, sizeof(*m->t));
    m->plan.count = calloc(m->plan.npieces + 1, sizeof(*m->plan.count));
    return m->t && m->plan.count ? 0 : -ENOMEM;
}

int ember_merge_frames(struct ember_profile *dst, struct merge_source *s, unsigned n,
                       size_t npieces, unsigned threads)
{
    struct fmerge m = {
        .dst = dst, .s = s, .n = n, .plan = {.npieces = npieces, .before = dst->frames.count}};
    int err = merge_init(&m);
    if (!err) {
        ember_crew_run(&m.crew, threads, run, &m);
        err = m.crew.err;
    }
    if (!err)
        finish_frames(&m);
    for (unsigned i = 0; i < n; i++) {
        ember_arena_release(&s[i].names); /* what is left: the serial path's */
        free(s[i].files);
        free(s[i].fhash);
        free(s[i].fslot);
        s[i].files = NULL;
        s[i].fhash = NULL;
        s[i].fslot = NULL;
    }
    free(m.hash);
    free(m.plan.count);
    free(m.t);
    return err;
}
