/*
 * frames.c - the frame-name table: each distinct name stored once.
 *
 * Names live in an arena and are NUL-terminated (so they can be handed to
 * C string functions), but may contain NUL bytes of their own: lengths are
 * authoritative. The open-addressing table stays at most half full.
 */
#include "profile_impl.h"
#include "util/vec.h"

#include <errno.h>
#include <stdlib.h>

enum { FRAMES_INITIAL_SLOTS = 1024 };

int ember_frames_init(struct ember_frames *f)
{
    memset(f, 0, sizeof(*f));
    ember_arena_init(&f->names);
    f->slots = calloc(FRAMES_INITIAL_SLOTS, sizeof(*f->slots));
    if (!f->slots)
        return -ENOMEM;
    f->mask = FRAMES_INITIAL_SLOTS - 1;
    return 0;
}

void ember_frames_release(struct ember_frames *f)
{
    ember_arena_release(&f->names);
    free(f->str);
    free(f->len);
    free(f->tag);
    free(f->slots);
    memset(f, 0, sizeof(*f));
}

static void frames_place(uint32_t *slots, uint32_t mask, uint64_t h, uint32_t id)
{
    uint32_t i = (uint32_t)h & mask;
    while (slots[i])
        i = (i + 1) & mask;
    slots[i] = id + 1;
}

static int frames_rehash(struct ember_frames *f)
{
    uint32_t nslots = (f->mask + 1) * 2;
    if (nslots == 0)
        return -ENOMEM;
    uint32_t *slots = calloc(nslots, sizeof(*slots));
    if (!slots)
        return -ENOMEM;
    for (uint32_t id = 0; id < f->count; id++)
        frames_place(slots, nslots - 1, ember_hash_bytes(f->str[id], f->len[id], 0), id);
    free(f->slots);
    f->slots = slots;
    f->mask = nslots - 1;
    return 0;
}

int ember_frames_intern_slow(struct ember_frames *f, const char *s, size_t n, uint64_t h,
                             uint32_t *id)
{
    if (n > UINT32_MAX || f->count >= UINT32_MAX - 1)
        return -ERANGE;
    if ((size_t)f->count + 1 > f->cap) {
        size_t cap = f->cap;
        if (EMBER_VEC_RESERVE(f->str, cap, f->count + 1) < 0)
            return -ENOMEM;
        size_t c2 = f->cap, c3 = f->cap;
        if (EMBER_VEC_RESERVE(f->len, c2, cap) < 0 || EMBER_VEC_RESERVE(f->tag, c3, cap) < 0)
            return -ENOMEM;
        f->cap = cap;
    }
    const char *copy = ember_arena_strndup(&f->names, s, n);
    if (!copy)
        return -ENOMEM;
    uint32_t nid = f->count;
    f->str[nid] = copy;
    f->len[nid] = (uint32_t)n;
    f->tag[nid] = (uint32_t)(h >> 32);
    f->count++;
    if ((uint64_t)f->count * 2 > (uint64_t)f->mask + 1) {
        int err = frames_rehash(f);
        if (err < 0)
            return err;
    } else {
        frames_place(f->slots, f->mask, h, nid);
    }
    *id = nid;
    return 0;
}
