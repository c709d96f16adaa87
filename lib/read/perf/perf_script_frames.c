/*
 * perf_script_frames.c - a `perf script` frame line into frames: the
 * script's naming of its symbol, --inline's chains, --addresses' placing,
 * and the line cache that spares most lines all of that.
 *
 * Invariants: a cached line's frames depend only on its key (symbol
 * without "+0x" offset, module, Java or not, and with --addrs an unknown
 * symbol's address); a slot's value is a frame id + 1, or LINE_LIST | an
 * index in the cache's lists.
 */
#include "read/perf/perf_names.h"
#include "read/perf/perf_script_impl.h"
#include "read/perf/perf_tidy.h"
#include "symbol/symbolizer.h"
#include "base/hash.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int ember_perf_buf_reserve(struct perf_parser *ps, size_t n)
{
    return EMBER_VEC_RESERVE(ps->buf, ps->bcap, n);
}

/* Names one piece of a symbol (FlameGraph's steps 4 to 7) into ps->buf;
 * *ann is the kind the script annotates it with ("_[k]": views spell it
 * from the frame's record), USER when none. */
static int name_piece(struct perf_parser *ps, const struct frame_line *f, const char *piece,
                      size_t plen, bool inlined, bool *unknown, size_t *out_len,
                      enum ember_frame_kind *ann)
{
    if (ember_perf_buf_reserve(ps, plen + f->mod_len + f->pc_len + 16) < 0)
        return -ENOMEM;
    *out_len = ember_perf_name_piece(ps->buf, piece, plen, f->mod, f->mod_len, f->pc, f->pc_len,
                                     inlined, ps->java, &ps->po, unknown, ann);
    return 0;
}

static bool offset_suffix(const char *s, size_t n, size_t *cut)
{
    /* "+0x<lowercase hex>" at the end */
    size_t i = n;
    while (i > 0 && ((s[i - 1] >= '0' && s[i - 1] <= '9') || (s[i - 1] >= 'a' && s[i - 1] <= 'f')))
        i--;
    if (i == n || i < 3 || memcmp(s + i - 3, "+0x", 3) != 0)
        return false;
    *cut = i - 3;
    return true;
}

/* ps->buf's name as a frame; one the script annotates keeps its kind, which
 * views spell ("name_[k]"). */
static int intern_buf(struct perf_parser *ps, size_t len, enum ember_frame_kind ann, uint32_t *id)
{
    if (ann == EMBER_FRAME_USER)
        return ember_profile_intern(ps->p, ps->buf, len, id);
    struct ember_frame fr = {.name = ps->buf,
                             .name_len = len,
                             .module = EMBER_NO_MODULE,
                             .kind = ann,
                             .kind_in_name = true};
    return ember_profile_intern_frame(ps->p, &fr, id);
}

/* Runs the script's whole naming of a frame line; frames in written order
 * (root-most first) go to out. */
static int name_frame_line(struct perf_parser *ps, const struct frame_line *f, uint32_t **out,
                           size_t *nout, size_t *cap, bool *unknown)
{
    const char *raw = f->func;
    size_t rlen = f->func_len, cut;
    *nout = 0;
    *unknown = false;
    if (offset_suffix(raw, rlen, &cut))
        rlen = cut;
    if (ember_perf_parenthesized_only(raw, rlen))
        return 0;
    /* Perl's split /->/ drops trailing empty pieces. */
    while (rlen >= 2 && memcmp(raw + rlen - 2, "->", 2) == 0)
        rlen -= 2;
    size_t start = 0, idx = 0;
    while (start < rlen || (idx == 0 && rlen > 0)) {
        const char *arrow = memmem(raw + start, rlen - start, "->", 2);
        size_t end = arrow ? (size_t)(arrow - raw) : rlen;
        size_t len;
        enum ember_frame_kind ann;
        int err = name_piece(ps, f, raw + start, end - start, idx > 0, unknown, &len, &ann);
        if (!err)
            err = EMBER_VEC_RESERVE(*out, *cap, *nout + 1);
        if (!err)
            err = intern_buf(ps, len, ann, &(*out)[*nout]);
        if (err)
            return err;
        (*nout)++;
        idx++;
        if (!arrow)
            break;
        start = end + 2;
    }
    return 0;
}

/* ---- the line cache --------------------------------------------------- */

int ember_perf_cache_init(struct line_cache *c)
{
    memset(c, 0, sizeof(*c));
    c->slots = calloc(1024, sizeof(*c->slots));
    c->mask = 1023;
    return c->slots ? 0 : -ENOMEM;
}

void ember_perf_cache_release(struct line_cache *c)
{
    free(c->slots);
    free(c->lists);
    free(c->frames);
}

static void key_hash(struct perf_parser *ps, const struct line_key *k, uint64_t *lo, uint32_t *hi)
{
    *lo = ember_hash_bytes(k->sym, k->sym_len, k->java);
    /* consecutive frames often share a module: hash it once */
    if (k->mod_len != ps->last_mod_len || memcmp(k->mod, ps->last_mod, k->mod_len) != 0) {
        if (k->mod_len <= sizeof(ps->last_mod)) {
            memcpy(ps->last_mod, k->mod, k->mod_len);
            ps->last_mod_len = k->mod_len;
        } else {
            ps->last_mod_len = SIZE_MAX;
        }
        ps->last_mod_hash = ember_hash_bytes(k->mod, k->mod_len, 2);
    }
    uint64_t h = ps->last_mod_hash;
    if (k->pc_len)
        h ^= ember_hash_bytes(k->pc, k->pc_len, 3) * 0x9E3779B97F4A7C15ULL;
    *hi = (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static struct line_slot *cache_find(struct line_cache *c, uint64_t lo, uint32_t hi)
{
    for (uint32_t i = (uint32_t)lo & c->mask;; i = (i + 1) & c->mask) {
        struct line_slot *e = &c->slots[i];
        if (!e->value || (e->lo == lo && e->hi == hi))
            return e;
    }
}

static uint64_t line_slot_hash(const void *slot)
{
    return ((const struct line_slot *)slot)->lo;
}

static bool line_slot_used(const void *slot)
{
    return ((const struct line_slot *)slot)->value != 0;
}

/* Stores the frames of a line; returns its slot (the table may have moved). */
static int cache_add(struct line_cache *c, uint64_t lo, uint32_t hi, const uint32_t *frames,
                     size_t n, bool unknown, struct line_slot **out)
{
    if ((c->count + 1) * 2 > c->mask + 1 &&
        ember_table_grow((void **)&c->slots, &c->mask, sizeof(*c->slots), line_slot_hash,
                         line_slot_used) < 0)
        return -ENOMEM;
    uint32_t value;
    if (n == 1 && !unknown && frames[0] < LINE_LIST - 1) {
        value = frames[0] + 1;
    } else {
        if (c->nlists >= LINE_LIST - 1 || c->nframes + n > UINT32_MAX)
            return -ERANGE;
        if (EMBER_VEC_RESERVE(c->lists, c->lcap, c->nlists + 1) < 0 ||
            EMBER_VEC_RESERVE(c->frames, c->fcap, c->nframes + n) < 0)
            return -ENOMEM;
        if (n)
            memcpy(c->frames + c->nframes, frames, n * sizeof(*frames));
        c->lists[c->nlists] = (struct line_list){(uint32_t)c->nframes, (uint32_t)n, unknown};
        c->nframes += n;
        value = LINE_LIST | (uint32_t)c->nlists++;
    }
    struct line_slot *e = cache_find(c, lo, hi);
    *e = (struct line_slot){lo, hi, value};
    c->count++;
    *out = e;
    return 0;
}

/* --inline: a frame per function of the chain, root-most first, each with
 * its file, line and column, the inner ones inlined; with --context, views
 * of names spell them "func:file:line" as the script does. A function
 * without a file keeps the old spelling in its name. */
static int inline_frames(struct perf_parser *ps, const struct ember_symbol_chain *chain,
                         uint32_t **fr, size_t *n, size_t *cap)
{
    if (EMBER_VEC_RESERVE(*fr, *cap, chain->count) < 0)
        return -ENOMEM;
    for (uint32_t k = 0; k < chain->count; k++) {
        struct ember_frame rec;
        int err =
            ember_perf_inline_frame(&chain->frames[k], ps->po.context, &ps->buf, &ps->bcap, &rec);
        if (!err)
            err = ember_profile_intern_frame(ps->p, &rec, &(*fr)[k]);
        if (err)
            return err;
    }
    *n = chain->count;
    return 0;
}

static int frame_slow(struct perf_parser *ps, const struct frame_line *f, uint32_t **fr, size_t *n,
                      size_t *cap, bool *unknown)
{
    const struct ember_perf_opts *po = &ps->po;
    if (po->inline_frames && ps->sym && !ember_module_is_kernel(f->mod, f->mod_len) &&
        !ember_module_is_jit(f->mod, f->mod_len) && !memmem(f->mod, f->mod_len, "kernel.", 7)) {
        const struct ember_symbol_chain *chain;
        int r = ember_symbolizer_resolve_perf(ps->sym, f->mod, f->mod_len, f->pc, f->pc_len,
                                              f->func, f->func_len, &chain);
        if (r == 0) {
            *unknown = false;
            return inline_frames(ps, chain, fr, n, cap);
        }
        if (r != -ENOENT)
            return r;
    }
    return name_frame_line(ps, f, fr, n, cap, unknown);
}

/* A frame line; [i, j) is its first word (the address). */
static int place_frames(struct perf_parser *ps, const struct frame_line *f, uint32_t *fr, size_t n);
static int on_frame_placed(struct perf_parser *ps, const struct frame_line *f);

int ember_perf_on_frame_at(struct perf_parser *ps, const char *s, size_t n, size_t i, size_t j)
{
    const struct ember_perf_opts *po = &ps->po;
    if (!ps->keep)
        return 0;
    struct frame_line f;
    if (!ember_perf_frame_at(s, n, i, j, &f)) {
        ember_perf_warn_line(ps, s, n,
                             "unrecognized line (expected an event line, an indented "
                             "\"address symbol (module)\" frame, or a blank line)");
        return 0;
    }
    size_t nf = 0, cut;
    bool unknown = false;
    if (po->inline_frames) { /* results depend on the address: the symbolizer caches */
        int err = frame_slow(ps, &f, &ps->fr, &nf, &ps->frcap, &unknown);
        if (!err && ps->o->addresses)
            err = place_frames(ps, &f, ps->fr, nf);
        if (err)
            return err;
        return po->srcline && !unknown ? ember_perf_defer_srcline(ps, ps->fr, nf)
                                       : ember_perf_push_frames(ps, ps->fr, nf);
    }
    if (ps->o->addresses)
        return on_frame_placed(ps, &f);
    struct line_key k = {f.func, f.mod, "", f.func_len, f.mod_len, 0, ps->java};
    if (offset_suffix(f.func, f.func_len, &cut))
        k.sym_len = cut;
    if (po->include_addrs && memmem(k.sym, k.sym_len, "[unknown]", 9))
        k.pc = f.pc, k.pc_len = f.pc_len;
    uint64_t lo;
    uint32_t hi;
    key_hash(ps, &k, &lo, &hi);
    struct line_slot *e = cache_find(&ps->cache, lo, hi);
    if (!e->value) {
        int err = frame_slow(ps, &f, &ps->fr, &nf, &ps->frcap, &unknown);
        if (!err)
            err = cache_add(&ps->cache, lo, hi, ps->fr, nf, unknown, &e);
        if (err)
            return err;
    }
    if (!(e->value & LINE_LIST)) {
        uint32_t frame = e->value - 1;
        return po->srcline ? ember_perf_defer_srcline(ps, &frame, 1)
                           : ember_perf_push_frames(ps, &frame, 1);
    }
    const struct line_list *l = &ps->cache.lists[e->value & ~LINE_LIST];
    if (l->count == 0)
        return 0; /* a line that names no frame, such as "(process)" */
    const uint32_t *frames = ps->cache.frames + l->offset;
    if (po->srcline && !l->unknown)
        return ember_perf_defer_srcline(ps, frames, l->count);
    return ember_perf_push_frames(ps, frames, l->count);
}

/* --addresses: the frames of a line at its address, in its module (the
 * last one kept: lines of one module come in runs), of the module's kind;
 * a line's frames after the first are inlined into it (perf's "a->b"). */
static int place_frames(struct perf_parser *ps, const struct frame_line *f, uint32_t *fr, size_t n)
{
    uint32_t module = EMBER_NO_MODULE;
    bool unknown = f->mod_len == 9 && memcmp(f->mod, "[unknown]", 9) == 0;
    if (!unknown &&
        (f->mod_len != ps->placed_mod_len || memcmp(f->mod, ps->placed_mod, f->mod_len) != 0)) {
        char path[4096];
        size_t len = f->mod_len < sizeof(path) ? f->mod_len : sizeof(path) - 1;
        memcpy(path, f->mod, len);
        path[len] = '\0';
        /* perf named the functions: pprof must not symbolize them again */
        struct ember_module m = {.path = path, .flags = EMBER_MODULE_FUNCTIONS};
        int err = ember_profile_module(ps->p, &m, &ps->placed_mod_id);
        if (err)
            return err;
        ps->placed_mod_len = len < sizeof(ps->placed_mod) ? len : SIZE_MAX;
        if (ps->placed_mod_len != SIZE_MAX)
            memcpy(ps->placed_mod, f->mod, len);
    }
    if (!unknown)
        module = ps->placed_mod_id;
    uint64_t addr = 0;
    for (size_t i = 0; i < f->pc_len && i < 16; i++) {
        char c = f->pc[i];
        addr = addr << 4 | (uint64_t)(c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    enum ember_frame_kind kind = ember_module_is_kernel(f->mod, f->mod_len) ? EMBER_FRAME_KERNEL
                                 : ember_module_is_jit(f->mod, f->mod_len)  ? EMBER_FRAME_JIT
                                                                            : EMBER_FRAME_USER;
    for (size_t i = 0; i < n; i++) {
        struct ember_frame rec;
        ember_profile_frame(ps->p, fr[i], &rec);
        rec.address = addr;
        rec.has_address = true;
        rec.module = module;
        if (rec.kind != EMBER_FRAME_INLINED)
            rec.kind = i == 0 ? kind : EMBER_FRAME_INLINED;
        int err = ember_profile_intern_frame(ps->p, &rec, &fr[i]);
        if (err)
            return err;
    }
    return 0;
}

/* --addresses, without --inline: the line's frames as cached by its text,
 * then placed at its address. */
static int on_frame_placed(struct perf_parser *ps, const struct frame_line *f)
{
    size_t nf = 0;
    bool unknown = false;
    int err = frame_slow(ps, f, &ps->fr, &nf, &ps->frcap, &unknown);
    if (!err)
        err = place_frames(ps, f, ps->fr, nf);
    if (err)
        return err;
    return ps->po.srcline && !unknown ? ember_perf_defer_srcline(ps, ps->fr, nf)
                                      : ember_perf_push_frames(ps, ps->fr, nf);
}
