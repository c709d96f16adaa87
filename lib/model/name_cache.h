/*
 * name_cache.h - a reader's memo from frame names to frame ids
 * (library-internal).
 *
 * Interning a name in the frame table reads a slot, then the name's hash
 * tag, length and text in three other places: four cache misses per frame
 * of every new stack once the table outgrows the cache. This memo keeps a
 * name's first bytes in its slot, one cache line, so a name seen before
 * costs one access (a longer one, one more for the rest of its text in
 * the frame table), which readers start for a whole stack's names at once
 * (ember_name_cache_prefetch) before looking them up. Names beyond the
 * memo's fixed size go to the frame table. Names are compared byte for
 * byte: the memo only saves time.
 */
#ifndef EMBER_MODEL_NAME_CACHE_H
#define EMBER_MODEL_NAME_CACHE_H

#include "model/profile_impl.h"

enum { EMBER_NAME_INLINE = 50 };

struct ember_name_slot {
    uint64_t hash;
    uint32_t id; /* + 1; 0: empty */
    uint16_t len;
    char text[EMBER_NAME_INLINE]; /* the first bytes of the name */
};

struct ember_name_cache {
    struct ember_name_slot *slots;
    uint32_t mask, count;
};

int ember_name_cache_init(struct ember_name_cache *c);
void ember_name_cache_release(struct ember_name_cache *c);
/* Remembers a name interned as id (nothing if the memo is full). */
void ember_name_cache_put(struct ember_name_cache *c, const char *s, size_t n, uint64_t h,
                          uint32_t id);

static inline uint64_t ember_name_hash(const char *s, size_t n)
{
    return ember_hash_bytes(s, n, 0);
}

static inline void ember_name_cache_prefetch(const struct ember_name_cache *c, uint64_t h)
{
    __builtin_prefetch(&c->slots[(uint32_t)h & c->mask]);
}

/* The frame of name [s, s + n), whose ember_name_hash is h, interned in f
 * if new. */
static inline int ember_name_cache_intern(struct ember_name_cache *c, struct ember_frames *f,
                                          const char *s, size_t n, uint64_t h, uint32_t *id)
{
    size_t head = n < EMBER_NAME_INLINE ? n : EMBER_NAME_INLINE;
    for (uint32_t i = (uint32_t)h & c->mask;; i = (i + 1) & c->mask) {
        const struct ember_name_slot *e = &c->slots[i];
        if (!e->id)
            break;
        if (e->hash == h && e->len == n && memcmp(e->text, s, head) == 0 &&
            (n == head || memcmp(f->str[e->id - 1] + head, s + head, n - head) == 0)) {
            *id = e->id - 1;
            return 0;
        }
    }
    int err = ember_frames_intern(f, s, n, id);
    if (!err)
        ember_name_cache_put(c, s, n, h, *id);
    return err;
}

#endif
