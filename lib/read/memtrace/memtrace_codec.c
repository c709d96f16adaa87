/*
 * memtrace_codec.c - memtrace's two compressed encodings: location events
 * (two levels of move-to-front tables of file and function names,
 * location_codec.ml) and backtraces (a cache of 2^14 location codes with a
 * predicted successor per bucket, backtrace_codec.ml).
 *
 * Invariants: the tables persist over the whole trace (per domain in v3),
 * as the writer's do; a table index naming an empty slot, a cache hit or a
 * prediction landing on a bucket no miss has filled, and a location code
 * used before its definition are errors (memtrace would assert or print
 * garbage). Location codes are OCaml ints on the writer's side (63 bits):
 * they are read as memtrace reads them, the top bit dropped, so that they
 * compare and print as memtrace's reader shows them.
 */
#include "read/memtrace/memtrace_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

#define MT_CODE_MASK (UINT64_MAX >> 1)

/* Strings pushed off a table while a location event still points to them
 * are freed once its callback has returned. */
struct mt_evicted {
    char *s[2 * 255];
    size_t n;
};

static void evict(struct mt_evicted *ev, char *s)
{
    if (s)
        ev->s[ev->n++] = s;
}

/* Moves slot i of an MTF table of names (and their payloads) to the front. */
static void to_front(char **name, struct mt_defnames **defs, unsigned i)
{
    char *n = name[i];
    struct mt_defnames *t = defs ? defs[i] : NULL;
    memmove(name + 1, name, i * sizeof(*name));
    name[0] = n;
    if (defs) {
        memmove(defs + 1, defs, i * sizeof(*defs));
        defs[0] = t;
    }
}

/* Pushes a new name at the front: the last slot falls off. */
static void push(char **name, struct mt_defnames **defs, char *s, struct mt_evicted *ev)
{
    evict(ev, name[MT_MTF - 1]);
    memmove(name + 1, name, (MT_MTF - 1) * sizeof(*name));
    name[0] = s;
    if (defs)
        memmove(defs + 1, defs, (MT_MTF - 1) * sizeof(*defs));
}

/* The name at index ix of a table (31: a new one, read at the cursor),
 * moved to the front. */
static int mtf_name(struct mt_decoder *dec, struct mt_cur *c, char **name,
                    struct mt_defnames **defs, unsigned ix, const char *what, struct mt_evicted *ev)
{
    if (ix < MT_MTF) {
        if (!name[ix])
            return mt_corrupt(dec, c, "%s table index %u names an empty slot", what, ix);
        to_front(name, defs, ix);
        return 0;
    }
    const char *s;
    size_t n;
    if (!mt_string(c, &s, &n))
        return mt_short(dec, c, what);
    char *copy = strndup(s, n);
    if (!copy)
        return -ENOMEM;
    /* memtrace's reader gives a new file the defname table of the one it
     * pushes off (a v1 writer's bug that v1 traces rely on) */
    struct mt_defnames *t = defs ? defs[MT_MTF - 1] : NULL;
    if (defs && !t && !(t = calloc(1, sizeof(*t)))) {
        free(copy);
        return -ENOMEM;
    }
    push(name, defs, copy, ev);
    if (defs)
        defs[0] = t;
    return 0;
}

/* One location record: 48 bits of line, columns and table indexes. */
static int location(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c,
                    struct mt_location *loc, struct mt_evicted *ev)
{
    uint64_t lo, hi;
    if (!mt_take(c, 4, &lo) || !mt_take(c, 2, &hi))
        return mt_short(dec, c, "a location record (6 bytes)");
    uint64_t w = hi << 32 | lo;
    loc->line = (uint32_t)(w & 0xfffff);
    loc->start_char = (uint32_t)(w >> 20 & 0xff);
    loc->end_char = (uint32_t)(w >> 28 & 0x3ff);
    struct mt_files *f = &dom->files;
    int err = mtf_name(dec, c, f->name, f->defs, (unsigned)(w >> 38 & 0x1f), "a file name", ev);
    if (err)
        return err;
    err =
        mtf_name(dec, c, f->defs[0]->name, NULL, (unsigned)(w >> 43 & 0x1f), "a function name", ev);
    if (err)
        return err;
    loc->file = f->name[0];
    loc->defname = f->defs[0]->name[0];
    return 0;
}

/* A summary of a code's locations, to tell a consistent redefinition. */
static uint32_t locations_hash(const struct mt_location *l, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u ^ n;
    for (size_t i = 0; i < n; i++) {
        uint64_t nums[3] = {l[i].line, l[i].start_char, l[i].end_char};
        h = ember_hash_bytes(nums, sizeof(nums), h);
        h = ember_hash_bytes(l[i].file, strlen(l[i].file) + 1, h);
        h = ember_hash_bytes(l[i].defname, strlen(l[i].defname) + 1, h);
    }
    return (uint32_t)(h ^ h >> 32);
}

static int define(struct mt_decoder *dec, struct mt_cur *c, uint64_t code, size_t n)
{
    uint32_t h = locations_hash(dec->locs, n), was;
    if (ember_u64map_get(&dec->codes, code, &was)) {
        if (was != h)
            return mt_corrupt(dec, c, "location code 0x%llx defined again with other locations",
                              (unsigned long long)code);
        return 0;
    }
    int err = ember_u64map_put(&dec->codes, code, h);
    if (!err && dec->tool->location)
        err = dec->tool->location(dec->ctx, code, dec->locs, n);
    return err;
}

int mt_location_event(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c)
{
    uint64_t code, n;
    if (!mt_take(c, 8, &code) || !mt_take(c, 1, &n))
        return mt_short(dec, c, "a location code and its number of locations");
    code &= MT_CODE_MASK;
    struct mt_evicted ev = {.n = 0};
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        err = location(dec, dom, c, &dec->locs[i], &ev);
    if (!err)
        err = define(dec, c, code, (size_t)n);
    for (size_t i = 0; i < ev.n; i++)
        free(ev.s[i]);
    return err;
}

/* Appends a code to the backtrace being decoded (emit false: the codewords
 * are only walked, for the caches). */
static int put(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c, size_t *pos,
               uint64_t code, bool emit)
{
    if (*pos >= MT_MAX_FRAMES)
        return mt_corrupt(dec, c, "a backtrace of more than %d frames", MT_MAX_FRAMES);
    if (emit && EMBER_VEC_RESERVE(dom->bt, dom->bt_cap, *pos + 1) < 0)
        return -ENOMEM;
    if (emit)
        dom->bt[*pos] = code;
    ++*pos;
    return 0;
}

/* A cache hit on bucket, then n predicted buckets after it; *pred ends on
 * the last one. */
static int hits(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c, size_t *pos,
                uint64_t bucket, uint64_t n, bool emit, uint64_t *pred)
{
    for (uint64_t k = 0;; k++) {
        if (!dom->filled[bucket])
            return mt_corrupt(dec, c,
                              "backtrace cache bucket %llu used before any location code was "
                              "stored in it",
                              (unsigned long long)bucket);
        int err = put(dec, dom, c, pos, dom->cache_loc[bucket], emit);
        if (err)
            return err;
        *pred = bucket;
        if (k == n)
            return 0;
        bucket = dom->cache_pred[bucket];
    }
}

static int miss(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c, size_t *pos,
                uint64_t bucket, bool emit)
{
    uint64_t lit;
    uint32_t h;
    if (!mt_take(c, 8, &lit))
        return mt_short(dec, c, "a location code (a cache miss's)");
    lit &= MT_CODE_MASK;
    if (!ember_u64map_get(&dec->codes, lit, (uint32_t *)&h))
        return mt_corrupt(dec, c, "location code 0x%llx used before a location event defined it",
                          (unsigned long long)lit);
    dom->cache_loc[bucket] = lit;
    dom->filled[bucket] = 1;
    return put(dec, dom, c, pos, lit, emit);
}

int mt_backtrace(struct mt_decoder *dec, struct mt_domain *dom, struct mt_cur *c,
                 uint64_t common_prefix, unsigned nencoded)
{
    /* a prefix longer than the previous backtrace follows a truncated one:
     * memtrace decodes (for the caches) and gives the previous one again */
    bool emit = common_prefix <= dom->bt_len;
    size_t pos = emit ? (size_t)common_prefix : 0;
    uint64_t pred = 0;
    for (unsigned i = 0; i < nencoded; i++) {
        uint64_t cw, n = 0;
        if (!mt_take(c, 2, &cw))
            return mt_short(dec, c, "a backtrace codeword");
        uint64_t bucket = cw >> 2, tag = cw & 3;
        dom->cache_pred[pred] = (uint16_t)bucket;
        int err;
        if (tag == 3) {
            err = miss(dec, dom, c, &pos, bucket, emit);
            pred = bucket;
        } else if (tag == 2 && !mt_take(c, 1, &n)) {
            return mt_short(dec, c, "a backtrace codeword's count of predictions");
        } else {
            err = hits(dec, dom, c, &pos, bucket, tag == 2 ? n : tag, emit, &pred);
        }
        if (err)
            return err;
    }
    dom->bt_shared = emit ? (size_t)common_prefix : dom->bt_len;
    if (emit)
        dom->bt_len = pos;
    return 0;
}

bool mt_cache_verify(const struct mt_domain *dom, uint64_t ix, uint64_t pred, uint64_t val)
{
    return ix == 0xffff || (ix < MT_CACHE && dom->cache_pred[ix] == pred &&
                            dom->cache_loc[ix] == (val & MT_CODE_MASK));
}

void mt_domain_free(struct mt_domain *dom)
{
    if (!dom)
        return;
    for (unsigned i = 0; i < MT_MTF; i++) {
        free(dom->files.name[i]);
        if (dom->files.defs[i])
            for (unsigned j = 0; j < MT_MTF; j++)
                free(dom->files.defs[i]->name[j]);
        free(dom->files.defs[i]);
    }
    free(dom->bt);
    free(dom);
}
