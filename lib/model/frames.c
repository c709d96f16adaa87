/*
 * frames.c - the frame table: each distinct frame stored once.
 *
 * A frame is a name and, when the input knows it, where it comes from
 * (struct ember_frame_loc: file, line, address, module, kind). Names live
 * in an arena and are NUL-terminated (so they can be handed to C string
 * functions), but may contain NUL bytes of their own: lengths are
 * authoritative. File names (and system names) are interned in their own
 * map, so that a loc can be compared and hashed by their pointers. The open-addressing
 * table stays at most half full; a name alone hashes as its bytes (the hot
 * path in profile_impl.h), a frame with a loc as its bytes seeded with the
 * loc, with tags of different parity so that neither lookup stops at the
 * other's frames.
 */
#include "model/profile_impl.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>

enum { FRAMES_INITIAL_SLOTS = 1024 };

/* Copying another table's frames (a merge), the home slots of those
 * COPY_AHEAD further on are fetched meanwhile: each is a cache miss, one
 * after the other otherwise (about two thirds of the copy's own time). */
enum { COPY_AHEAD = 8, COPY_RING = 16 };

/* A frame as a table keys it: its name, its loc (the table's copies of
 * its strings) and its hash. */
struct frame_key {
    const char *s;
    size_t n;
    uint64_t h;
    struct ember_frame_loc loc;
};

int ember_frames_init(struct ember_frames *f)
{
    memset(f, 0, sizeof(*f));
    ember_arena_init(&f->names);
    f->slots = calloc(FRAMES_INITIAL_SLOTS, sizeof(*f->slots));
    if (!f->slots || ember_strmap_init(&f->files) < 0)
        return -ENOMEM;
    f->mask = FRAMES_INITIAL_SLOTS - 1;
    return 0;
}

void ember_frames_release(struct ember_frames *f)
{
    ember_arena_release(&f->names);
    ember_strmap_release(&f->files);
    free(f->str);
    free(f->len);
    free(f->tag);
    free(f->loc);
    free(f->slots);
    memset(f, 0, sizeof(*f));
}

static uint64_t loc_seed(const struct ember_frame_loc *l)
{
    uint64_t s = ember_hash_u64((uint64_t)(uintptr_t)l->file ^ ((uint64_t)l->line << 32));
    s = ember_hash_u64(s ^ l->column ^ ((uint64_t)l->start_line << 32));
    s = ember_hash_u64(s ^ l->module ^ ((uint64_t)l->kind << 32) ^
                       ((uint64_t)l->has_address << 40) ^ ((uint64_t)l->place_in_name << 41) ^
                       ((uint64_t)l->kind_in_name << 42));
    s = ember_hash_u64(s ^ (uint64_t)l->pid ^ ((uint64_t)l->tid << 32));
    s = ember_hash_u64(s ^ (uint64_t)(uintptr_t)l->system_name ^ ((uint64_t)l->folded << 63));
    return ember_hash_u64(s ^ l->address);
}

uint64_t ember_frames_hash(const char *s, size_t n, const struct ember_frame_loc *loc)
{
    return ember_hash_bytes(s, n, loc ? loc_seed(loc) : 0);
}

static uint64_t frame_hash(const struct ember_frames *f, uint32_t id)
{
    const struct ember_frame_loc *l = &f->loc[id];
    return ember_frames_hash(f->str[id], f->len[id], l->detailed ? l : NULL);
}

static void frames_place(uint32_t *slots, uint32_t mask, uint64_t h, uint32_t id)
{
    uint32_t i = (uint32_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = id + 1;
}

/* The table made nslots slots (a power of two, more than twice the
 * frames), every frame placed again. */
static int frames_rehash(struct ember_frames *f, uint32_t nslots)
{
    if (nslots == 0)
        return -ENOMEM;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (uint32_t id = 0; id < f->count; id++)
        frames_place(slots, nslots - 1, frame_hash(f, id), id);
    free(f->slots);
    f->slots = slots;
    f->mask = nslots - 1;
    return 0;
}

/* Room for need frames in the arrays (one capacity for all). */
static int frames_grow(struct ember_frames *f, size_t need)
{
    if (need <= f->cap)
        return 0;
    size_t cap = f->cap;
    if (EMBER_VEC_RESERVE(f->str, cap, need) < 0)
        return -ENOMEM;
    size_t c2 = f->cap, c3 = f->cap, c4 = f->cap;
    if (EMBER_VEC_RESERVE(f->len, c2, cap) < 0 || EMBER_VEC_RESERVE(f->tag, c3, cap) < 0 ||
        EMBER_VEC_RESERVE(f->loc, c4, cap) < 0)
        return -ENOMEM;
    f->cap = cap;
    return 0;
}

int ember_frames_reserve(struct ember_frames *f, size_t n)
{
    if (n >= UINT32_MAX / 2)
        return 0; /* left to grow as frames come */
    uint64_t nslots = (uint64_t)f->mask + 1;
    while ((uint64_t)n * 2 > nslots)
        nslots *= 2;
    int err = frames_grow(f, n);
    return err || nslots == (uint64_t)f->mask + 1 ? err : frames_rehash(f, (uint32_t)nslots);
}

/* Appends a frame whose name is already stored at s. */
static int frames_append(struct ember_frames *f, const char *copy, size_t n, uint64_t h,
                         const struct ember_frame_loc *loc, uint32_t *id)
{
    if (f->count >= UINT32_MAX - 1)
        return -ERANGE;
    if (frames_grow(f, (size_t)f->count + 1) < 0)
        return -ENOMEM;
    uint32_t nid = f->count;
    f->str[nid] = copy;
    f->len[nid] = (uint32_t)n;
    f->tag[nid] = ember_frame_tag(h, loc != NULL);
    if (loc)
        f->loc[nid] = *loc;
    else
        memset(&f->loc[nid], 0, sizeof(f->loc[nid]));
    f->count++;
    if ((uint64_t)f->count * 2 > (uint64_t)f->mask + 1) {
        int err = frames_rehash(f, (f->mask + 1) * 2);
        if (err < 0)
            return err;
    } else {
        frames_place(f->slots, f->mask, h, nid);
    }
    *id = nid;
    return 0;
}

int ember_frames_intern_slow(struct ember_frames *f, const char *s, size_t n, uint64_t h,
                             uint32_t *id)
{
    if (n > UINT32_MAX)
        return -ERANGE;
    const char *copy = ember_arena_strndup(&f->names, s, n);
    return copy ? frames_append(f, copy, n, h, NULL, id) : -ENOMEM;
}

bool ember_frame_loc_same(const struct ember_frame_loc *a, const struct ember_frame_loc *b)
{
    return a->file == b->file && a->line == b->line && a->column == b->column &&
           a->start_line == b->start_line && a->module == b->module && a->address == b->address &&
           a->kind == b->kind && a->has_address == b->has_address &&
           a->place_in_name == b->place_in_name && a->kind_in_name == b->kind_in_name &&
           a->pid == b->pid && a->tid == b->tid && a->system_name == b->system_name &&
           a->folded == b->folded;
}

static bool loc_says_nothing(const struct ember_frame_loc *l)
{
    return !l->file && !l->line && !l->column && !l->start_line && l->module == EMBER_NO_MODULE &&
           !l->has_address && l->kind == EMBER_FRAME_USER && !l->system_name && !l->folded;
}

const char *ember_frames_keep(struct ember_frames *f, const char *s, size_t n)
{
    const char *kept = ember_strmap_get(&f->files, s, n);
    if (!kept) {
        kept = ember_arena_strndup(&f->files.arena, s, n);
        if (!kept || ember_strmap_put(&f->files, s, n, (void *)kept) < 0)
            return NULL;
    }
    return kept;
}

/* A frame as f keys it: its loc's strings f's own copies, and its hash.
 * Returns 1 where the loc says nothing (the frame is its name alone,
 * hashed as one). */
static int key_of(struct ember_frames *f, const char *s, size_t n, const struct ember_frame_loc *in,
                  struct frame_key *k)
{
    k->s = s;
    k->n = n;
    if (loc_says_nothing(in)) {
        k->h = ember_hash_bytes(s, n, 0);
        return 1;
    }
    if (n > UINT32_MAX)
        return -ERANGE;
    k->loc = *in;
    k->loc.detailed = true;
    if ((k->loc.file && !(k->loc.file = ember_frames_keep(f, k->loc.file, k->loc.file_len))) ||
        (k->loc.system_name &&
         !(k->loc.system_name = ember_frames_keep(f, k->loc.system_name, k->loc.system_name_len))))
        return -ENOMEM;
    k->h = ember_hash_bytes(s, n, loc_seed(&k->loc));
    return 0;
}

uint32_t ember_frames_find(const struct ember_frames *f, const char *s, size_t n,
                           const struct ember_frame_loc *loc, uint64_t h)
{
    uint32_t tag = ember_frame_tag(h, loc != NULL);
    for (uint32_t i = (uint32_t)h & f->mask; f->slots[i]; i = (i + 1) & f->mask) {
        uint32_t c = f->slots[i] - 1;
        if (f->tag[c] == tag && f->len[c] == n && memcmp(f->str[c], s, n) == 0 &&
            (!loc || ember_frame_loc_same(&f->loc[c], loc)))
            return c;
    }
    return UINT32_MAX;
}

/* The frame keyed k (with a loc), made when new. */
static int intern_key(struct ember_frames *f, const struct frame_key *k, uint32_t *id)
{
    if ((*id = ember_frames_find(f, k->s, k->n, &k->loc, k->h)) != UINT32_MAX)
        return 0;
    /* the name's bytes once, shared with its frame of a name alone */
    uint32_t plain;
    int err = ember_frames_intern(f, k->s, k->n, &plain);
    if (!err)
        err = frames_append(f, f->str[plain], k->n, k->h, &k->loc, id);
    if (!err)
        f->detailed = true;
    return err;
}

int ember_frames_intern_loc(struct ember_frames *f, const char *s, size_t n,
                            const struct ember_frame_loc *in, uint32_t *id)
{
    struct frame_key k;
    int err = key_of(f, s, n, in, &k);
    if (err == 1)
        return ember_frames_intern_hashed(f, s, n, k.h, id);
    return err ? err : intern_key(f, &k, id);
}

/* src's frame i as f keys it (its module by mods), its home slot fetched:
 * 1 where it is a name alone. */
static int key_ahead(struct ember_frames *f, const struct ember_frames *src, uint32_t i,
                     const uint32_t *mods, struct frame_key *k)
{
    const struct ember_frame_loc *l = &src->loc[i];
    if (!l->detailed) {
        k->s = src->str[i];
        k->n = src->len[i];
        k->h = ember_hash_bytes(k->s, k->n, 0);
        __builtin_prefetch(&f->slots[(uint32_t)k->h & f->mask]);
        return 1;
    }
    struct ember_frame_loc loc = *l;
    if (loc.module != EMBER_NO_MODULE)
        loc.module = mods[loc.module];
    int err = key_of(f, src->str[i], src->len[i], &loc, k);
    if (err >= 0)
        __builtin_prefetch(&f->slots[(uint32_t)k->h & f->mask]);
    return err;
}

int ember_frames_copy(struct ember_frames *f, const struct ember_frames *src, uint32_t from,
                      uint32_t to, const uint32_t *mods, uint32_t *out)
{
    struct frame_key ring[COPY_RING];
    int kind[COPY_RING];
    for (uint32_t i = from; i < to && i - from < COPY_AHEAD; i++)
        if ((kind[i % COPY_RING] = key_ahead(f, src, i, mods, &ring[i % COPY_RING])) < 0)
            return kind[i % COPY_RING];
    for (uint32_t i = from; i < to; i++) {
        if (to - i > COPY_AHEAD) { /* frame i + COPY_AHEAD is there */
            uint32_t ahead = i + COPY_AHEAD;
            if ((kind[ahead % COPY_RING] =
                     key_ahead(f, src, ahead, mods, &ring[ahead % COPY_RING])) < 0)
                return kind[ahead % COPY_RING];
        }
        const struct frame_key *k = &ring[i % COPY_RING];
        int err = kind[i % COPY_RING] == 1
                      ? ember_frames_intern_hashed(f, k->s, k->n, k->h, &out[i - from])
                      : intern_key(f, k, &out[i - from]);
        if (err)
            return err;
    }
    return 0;
}

void ember_frames_place_new(struct ember_frames *f, uint32_t n, const uint64_t *hash)
{
    for (uint32_t i = 0; i < n; i++) { /* slots fetched ahead, as a copy fetches them */
        if (i + COPY_AHEAD < n)
            __builtin_prefetch(&f->slots[(uint32_t)hash[i + COPY_AHEAD] & f->mask]);
        frames_place(f->slots, f->mask, hash[i], f->count + i);
    }
    f->count += n;
}
