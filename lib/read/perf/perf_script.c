/*
 * perf_script.c - `perf script` text into a profile, by the rules of
 * FlameGraph's stackcollapse-perf.pl (see notes in perf_tidy.c for where
 * ember departs from them on purpose).
 *
 * The input is samples: an event line at column 0 ("comm pid/tid [cpu]
 * time: period event:"), frame lines (indented "pc symbol (module)", leaf
 * first) and a blank line. Differences from the script, all deliberate:
 * - a sample not followed by a blank line (end of file, or the next event
 *   line) is kept, not dropped or glued to the next one;
 * - a one-character comm is an ordinary comm;
 * - an event line that carries its only frame ("comm pid time: 1 cycles:
 *   ffff sym (mod)", as perf prints without -g) is a one-frame sample.
 *
 * Speed: a frame line's name depends only on the text after its address
 * (and on whether the process is Java), so results are cached by that text:
 * most lines cost a hash and a memcmp. Memory grows with distinct frame
 * lines and distinct stacks, not with the input.
 */
#include "read/read_impl.h"
#include "read/perf/perf_names.h"
#include "read/perf/perf_opts.h"
#include "read/perf/perf_tidy.h"
#include "base/chunk.h"
#include "symbol/symbolizer.h"
#include "base/diag.h"
#include "base/hash.h"
#include "base/table.h"
#include "base/vec.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A frame line's result depends only on its symbol (without "+0x" offset),
 * its module, whether the process is Java, and for unresolved symbols with
 * --addrs, its address. The cache identifies a line by two independent
 * 64-bit hashes, of the symbol and of the module (and address): a false hit
 * would need both to collide, about 2^-100 for a million distinct lines,
 * far below the odds of a memory error. That keeps it at 24 bytes a line
 * and spares a comparison of strings that are rarely in cache. */
struct line_key {
    const char *sym, *mod, *pc;
    size_t sym_len, mod_len, pc_len;
    bool java;
};

/* A slot: the two hashes (the second cut to 32 bits: 96 bits in all) and the
 * result: a frame id + 1 for the common one-frame line, else LINE_LIST | an
 * index in lists. 16 bytes, so that large tables stay in cache. */
enum { LINE_LIST = 1u << 31 };

struct line_slot {
    uint64_t lo;
    uint32_t hi;
    uint32_t value; /* 0: empty slot */
};

struct line_list {
    uint32_t offset, count; /* in frames */
    bool unknown;           /* symbol and module both unknown: no srcline follows */
};

struct line_cache {
    struct line_slot *slots;
    uint32_t mask, count;
    struct line_list *lists; /* results other than one known frame */
    size_t nlists, lcap;
    uint32_t *frames;
    size_t nframes, fcap;
};

struct pending_frame { /* --srcline: frames waiting for their source line */
    bool active;
    uint32_t *ids;
    size_t n, cap;
    char *join; /* scratch for "name:location" */
    size_t jcap;
};

/* The periods' value while reading; named by set_unit at the end. */
#define PERIOD_VALUE "ember-perf-period"

struct perf_parser {
    const struct ember_read_opts *o;
    struct ember_perf_opts po; /* o's perf options */
    struct ember_profile *p;
    struct ember_read_stats *st;
    const char *file;
    uint64_t line;
    uint64_t other_line; /* where st->other_event was first seen */

    /* the event filter: fixed up front, or the first event seen */
    char filter[128];
    size_t filter_len;
    bool have_filter;

    /* the sample being read */
    bool in_sample; /* an event line was seen and no blank line yet */
    bool keep;      /* ... and it passed the filter */
    bool java;
    uint32_t root;
    int64_t period;
    bool weighed;               /* some sample kept had a period: weights are the event's count */
    unsigned vsamples, vperiod; /* the values: samples, and the periods' sum */
    uint32_t *stack;            /* frames, leaf-first, each line's group reversed */
    size_t nstack, scap;

    struct line_cache cache;
    struct pending_frame pend;
    struct ember_symbolizer *sym;

    char placed_mod[256]; /* --addresses: the last module interned, and its id */
    size_t placed_mod_len;
    uint32_t placed_mod_id;
    char last_mod[256]; /* the last module hashed, and its hash */
    size_t last_mod_len;
    uint64_t last_mod_hash;

    char *buf; /* scratch for building names */
    size_t bcap;
    uint32_t *fr; /* scratch for one line's frames */
    size_t frcap;
    struct ember_diag *d;
};

static bool is_ws(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

static bool is_word(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static bool is_lower_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static void warn_line(struct perf_parser *ps, const char *s, size_t n, const char *what)
{
    ps->st->skipped++;
    if (!ps->o->warn)
        return;
    struct ember_diag d;
    char q[200];
    ember_quote(q, sizeof(q), s, n, 120);
    ember_diag_set(&d, 0, ps->file, ps->line, "%s: \"%s\"", what, q);
    ps->o->warn(ps->o->warn_ctx, &d);
}

/* ---- event lines ------------------------------------------------------ */

struct event_head {
    const char *comm, *pid, *tid, *rest;
    size_t comm_len, pid_len, tid_len, rest_len;
};

/* "comm pid[/tid] ..." where comm may hold spaces: the comm ends at the first
 * whitespace run followed by digits, an optional "/digits", and whitespace. */
static bool parse_event_head(const char *s, size_t n, struct event_head *ev)
{
    if (n == 0 || is_ws((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++) {
        if (!is_ws((unsigned char)s[i]) || is_ws((unsigned char)s[i - 1]))
            continue;
        size_t j = i;
        while (j < n && is_ws((unsigned char)s[j]))
            j++;
        size_t k = j;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
        if (k == j)
            continue;
        size_t m = k, t0 = 0;
        if (m < n && s[m] == '/') {
            t0 = m + 1;
            m = t0;
            while (m < n && is_digit((unsigned char)s[m]))
                m++;
            if (m == t0)
                continue;
        }
        if (m >= n || !is_ws((unsigned char)s[m]))
            continue;
        ev->comm = s;
        ev->comm_len = i;
        if (t0) {
            ev->pid = s + j, ev->pid_len = k - j;
            ev->tid = s + t0, ev->tid_len = m - t0;
        } else {
            ev->pid = "?", ev->pid_len = 1;
            ev->tid = s + j, ev->tid_len = k - j;
        }
        while (m < n && is_ws((unsigned char)s[m]))
            m++;
        ev->rest = s + m;
        ev->rest_len = n - m;
        return true;
    }
    return false;
}

/* What follows "comm pid" on a line at column 0 that names no event as
 * the script reads one: an event line still, if it is empty, a "[cpu]",
 * holds perf's timestamp ("123.456789:") or ends with an event ("EVENT:"). The script takes any
 * "comm pid ..." line; that made a /proc/PID/maps line ("5570-5584 r--p 00000000 fe:00 ...") a
 * sample. */
static bool bare_event_rest(const char *s, size_t n)
{
    size_t e = n;
    while (e > 0 && is_ws((unsigned char)s[e - 1]))
        e--;
    if (e > 1 && s[e - 1] == ':') /* "cpu-clock:" (perf script -F comm,pid,event) */
        return true;
    size_t i = 0;
    if (i < n && s[i] == '[') {
        while (i < n && s[i] != ']')
            i++;
        i++;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
    }
    if (i >= n)
        return true;
    size_t a = i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    if (i == a || i >= n || s[i] != '.')
        return false;
    size_t b = ++i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    return i > b && i < n && s[i] == ':';
}

/* The script's ":\s*(\d+)*\s+(\S+):\s*$": the line ends with "EVENT:", after
 * whitespace, after an optional period, after a ':'. */
static bool parse_event_name(const char *s, size_t n, const char **ev, size_t *evlen,
                             int64_t *period)
{
    while (n > 0 && is_ws((unsigned char)s[n - 1]))
        n--;
    size_t a = n;
    while (a > 0 && !is_ws((unsigned char)s[a - 1]))
        a--;
    if (n - a < 2 || s[n - 1] != ':')
        return false;
    size_t i = a;
    while (i > 0 && is_ws((unsigned char)s[i - 1]))
        i--;
    if (i == a)
        return false;
    size_t k = i;
    while (k > 0 && is_digit((unsigned char)s[k - 1]))
        k--;
    size_t m = k;
    while (m > 0 && is_ws((unsigned char)s[m - 1]))
        m--;
    if (m == 0 || s[m - 1] != ':')
        return false;
    *ev = s + a;
    *evlen = n - 1 - a;
    int64_t v = 0;
    for (size_t x = k; x < i; x++)
        v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (s[x] - '0');
    *period = v; /* 0: none */
    return true;
}

/* ---- frame lines ------------------------------------------------------ */

struct frame_line {
    const char *pc, *func, *mod;
    size_t pc_len, func_len, mod_len;
};

/* The '(' that the ')' at s[r] closes, when it follows a space; 0 if
 * none. A module may hold parentheses: "(/memfd:jit (deleted))". */
static size_t balanced_open(const char *s, size_t r)
{
    int depth = 0;
    for (size_t i = r + 1; i-- > 0;) {
        depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
        if (depth == 0)
            return i > 0 && s[i - 1] == ' ' ? i : 0;
    }
    return 0;
}

/* The script's "^\s*(\w+)\s*(.+) \((.*)\)": the module is in the
 * parentheses that close at the last ')', the symbol is what lies between
 * the address and the module (at least one character). Where the script's
 * backtracking takes the last " (" instead, a module with parentheses of
 * its own ("(/memfd:x (deleted))") lost its name; when the parentheses do
 * not balance, the last " (" it is. */
static bool parse_frame_at(const char *s, size_t n, size_t i, size_t j, struct frame_line *f)
{
    if (j == i)
        return false;
    size_t k = j;
    while (k < n && is_ws((unsigned char)s[k]))
        k++;
    const char *rp = s[n - 1] == ')' ? s + n - 1 : memrchr(s, ')', n);
    if (!rp)
        return false;
    size_t r = (size_t)(rp - s);
    /* only a module that ends in ')' needs counting: "(x (deleted))" */
    size_t q = r > 0 && s[r - 1] == ')' ? balanced_open(s, r) : 0;
    if (q == 0) {
        q = r;
        for (;;) {
            const char *lp = memrchr(s, '(', q);
            if (!lp)
                return false;
            q = (size_t)(lp - s);
            if (q > 0 && s[q - 1] == ' ')
                break;
        }
    }
    q--; /* the space of " (" */
    size_t x = k < q ? k : q - 1;
    if (q == 0 || x < i + 1)
        return false;
    f->pc = s + i;
    f->pc_len = (j < x ? j : x) - i;
    f->func = s + x;
    f->func_len = q - x;
    f->mod = s + q + 2;
    f->mod_len = r - q - 2;
    return true;
}

/* The script's "^\s*(\w+)": the address is [*i, *j). */
static void scan_address(const char *s, size_t n, size_t *i, size_t *j)
{
    size_t a = 0;
    while (a < n && is_ws((unsigned char)s[a]))
        a++;
    size_t b = a;
    while (b < n && is_word((unsigned char)s[b]))
        b++;
    *i = a;
    *j = b;
}

static bool parse_frame(const char *s, size_t n, struct frame_line *f)
{
    size_t i, j;
    scan_address(s, n, &i, &j);
    return parse_frame_at(s, n, i, j, f);
}

static int buf_reserve(struct perf_parser *ps, size_t n)
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
    if (buf_reserve(ps, plen + f->mod_len + f->pc_len + 16) < 0)
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

static int cache_init(struct line_cache *c)
{
    memset(c, 0, sizeof(*c));
    c->slots = calloc(1024, sizeof(*c->slots));
    c->mask = 1023;
    return c->slots ? 0 : -ENOMEM;
}

static void cache_release(struct line_cache *c)
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

/* ---- samples ---------------------------------------------------------- */

static int push_frames(struct perf_parser *ps, const uint32_t *fr, size_t n)
{
    if (EMBER_VEC_RESERVE(ps->stack, ps->scap, ps->nstack + n) < 0)
        return -ENOMEM;
    for (size_t i = n; i-- > 0;)
        ps->stack[ps->nstack++] = fr[i];
    return 0;
}

/* Ends the current sample: its frames from the leaf, then the root frame. */
static int end_sample(struct perf_parser *ps)
{
    int err = 0;
    if (ps->in_sample && ps->keep) {
        uint32_t node;
        err = EMBER_VEC_RESERVE(ps->stack, ps->scap, ps->nstack + 1);
        if (!err) {
            ps->stack[ps->nstack] = ps->root;
            err = ember_profile_add_stack(ps->p, ps->stack, ps->nstack + 1, EMBER_LEAF_FIRST, NULL,
                                          &node);
        }
        if (!err)
            err = ember_profile_add(ps->p, node, ps->vperiod, ps->period);
        if (!err)
            err = ember_profile_add(ps->p, node, ps->vsamples, 1);
        if (!err)
            ps->st->samples++;
        else if (err == -ERANGE)
            err = ember_diag_set(ps->d, err, ps->file, ps->line,
                                 "sample weights overflow a 64-bit count");
    }
    ps->in_sample = false;
    ps->keep = false;
    ps->nstack = 0;
    return err;
}

static void copy_name(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A pid or tid as perf prints it: its number, -1 for "?" (unknown), -2 when
 * it is too long to be one. */
static int64_t task_id(const char *s, size_t n)
{
    if (n == 1 && s[0] == '?')
        return -1;
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
        return -2; /* kept as text, as printed */
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

static int start_sample(struct perf_parser *ps, const struct event_head *ev, const char *line,
                        size_t len)
{
    const struct ember_perf_opts *po = &ps->po;
    const char *name;
    size_t nlen;
    int64_t period = 1;
    int err = end_sample(ps);
    if (err)
        return err;
    ps->in_sample = true;
    if (parse_event_name(line, len, &name, &nlen, &period)) {
        if (!ps->have_filter) {
            copy_name(ps->filter, sizeof(ps->filter), name, nlen);
            ps->filter_len = strlen(ps->filter);
            ps->have_filter = true;
            copy_name(ps->st->kept_event, sizeof(ps->st->kept_event), name, nlen);
        } else if (!ember_perf_same_event(name, nlen, ps->filter, ps->filter_len)) {
            if (!ps->st->other_event[0]) {
                copy_name(ps->st->other_event, sizeof(ps->st->other_event), name, nlen);
                ps->other_line = ps->line;
            }
            ps->st->filtered++;
            return 0;
        }
    }
    ps->keep = true;
    /* no period, or 0, counts as one sample, as the script does */
    ps->period = period > 0 ? period : 1;
    ps->weighed |= period > 0;
    ps->java = ev->comm_len >= 4 && memcmp(ev->comm, "java", 4) == 0;
    /* root frame: the process or thread (views spell "comm-PID/TID") */
    int64_t pid = task_id(ev->pid, ev->pid_len), tid = task_id(ev->tid, ev->tid_len);
    if ((po->include_tid || po->include_pid) && pid >= -1 && tid >= -1) {
        struct ember_frame fr = {.name = ev->comm,
                                 .name_len = ev->comm_len,
                                 .module = EMBER_NO_MODULE,
                                 .kind = po->include_tid ? EMBER_FRAME_THREAD : EMBER_FRAME_PROCESS,
                                 .pid = pid,
                                 .tid = tid,
                                 .kind_in_name = true};
        return ember_profile_intern_frame(ps->p, &fr, &ps->root);
    }
    /* the command alone (or ids too long for a number: their text) */
    if (buf_reserve(ps, ev->comm_len + ev->pid_len + ev->tid_len + 4) < 0)
        return -ENOMEM;
    char *b = ps->buf;
    size_t o = 0;
    for (size_t i = 0; i < ev->comm_len; i++)
        b[o++] = ev->comm[i] == ' ' ? '_' : ev->comm[i];
    if (po->include_tid || po->include_pid) {
        b[o++] = '-';
        memcpy(b + o, ev->pid, ev->pid_len);
        o += ev->pid_len;
        if (po->include_tid) {
            b[o++] = '/';
            memcpy(b + o, ev->tid, ev->tid_len);
            o += ev->tid_len;
        }
    }
    return ember_perf_intern_root(ps->p, ps->buf, o, po->include_tid, &ps->root);
}

/* "file:line" (perf's srcline) into fr's file and line; false if it is
 * not of that form (the text is then kept in the name, as it is). */
static bool split_place(const char *s, size_t n, struct ember_frame *fr)
{
    const char *colon = memrchr(s, ':', n);
    if (!colon || colon == s || colon + 1 == s + n || (size_t)(s + n - colon - 1) > 9)
        return false;
    uint32_t line = 0;
    for (const char *p = colon + 1; p < s + n; p++) {
        if (!is_digit((unsigned char)*p))
            return false;
        line = line * 10 + (uint32_t)(*p - '0');
    }
    if (line == 0)
        return false;
    fr->file = s;
    fr->file_len = (size_t)(colon - s);
    fr->line = line;
    return true;
}

/* --srcline: the line after a frame is its source location. */
static int finish_pending(struct perf_parser *ps, const char *s, size_t n)
{
    struct pending_frame *pf = &ps->pend;
    /* remove "[...]" parts, then surrounding whitespace */
    if (buf_reserve(ps, n + 1) < 0)
        return -ENOMEM;
    char *loc = ps->buf;
    size_t ll = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '[') {
            const char *close = memchr(s + i, ']', n - i);
            if (close) {
                i = (size_t)(close - s);
                continue;
            }
        }
        loc[ll++] = s[i];
    }
    size_t a = 0;
    while (a < ll && is_ws((unsigned char)loc[a]))
        a++;
    while (ll > a && is_ws((unsigned char)loc[ll - 1]))
        ll--;
    size_t nids = pf->n;
    if (EMBER_VEC_RESERVE(ps->fr, ps->frcap, nids) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < nids; k++) {
        ps->fr[k] = pf->ids[k];
        if (ll == a)
            continue;
        /* "file:line": a frame that knows its place, spelled as the script
         * does ("func:file:line") where names are shown */
        struct ember_frame fr; /* with its address and module, when kept */
        ember_profile_frame(ps->p, pf->ids[k], &fr);
        fr.place_in_name = true;
        if (split_place(loc + a, ll - a, &fr)) {
            int err = ember_profile_intern_frame(ps->p, &fr, &ps->fr[k]);
            if (err)
                return err;
            continue;
        }
        /* another text: "name:text", the name as views spell it ("f_[k]") */
        fr.place_in_name = false;
        size_t len = ember_frame_spell(&fr, NULL, 0);
        if (EMBER_VEC_RESERVE(pf->join, pf->jcap, len + 2 + (ll - a)) < 0)
            return -ENOMEM;
        ember_frame_spell(&fr, pf->join, len + 1);
        pf->join[len] = ':';
        memcpy(pf->join + len + 1, loc + a, ll - a);
        int err = ember_profile_intern(ps->p, pf->join, len + 1 + (ll - a), &ps->fr[k]);
        if (err)
            return err;
    }
    pf->active = false;
    pf->n = 0;
    return push_frames(ps, ps->fr, nids);
}

static int defer_for_srcline(struct perf_parser *ps, const uint32_t *fr, size_t n)
{
    struct pending_frame *pf = &ps->pend;
    if (EMBER_VEC_RESERVE(pf->ids, pf->cap, n) < 0)
        return -ENOMEM;
    if (n)
        memcpy(pf->ids, fr, n * sizeof(*fr));
    pf->n = n;
    pf->active = true;
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

static int on_frame_at(struct perf_parser *ps, const char *s, size_t n, size_t i, size_t j)
{
    const struct ember_perf_opts *po = &ps->po;
    if (!ps->keep)
        return 0;
    struct frame_line f;
    if (!parse_frame_at(s, n, i, j, &f)) {
        warn_line(ps, s, n,
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
        return po->srcline && !unknown ? defer_for_srcline(ps, ps->fr, nf)
                                       : push_frames(ps, ps->fr, nf);
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
        return po->srcline ? defer_for_srcline(ps, &frame, 1) : push_frames(ps, &frame, 1);
    }
    const struct line_list *l = &ps->cache.lists[e->value & ~LINE_LIST];
    if (l->count == 0)
        return 0; /* a line that names no frame, such as "(process)" */
    const uint32_t *frames = ps->cache.frames + l->offset;
    if (po->srcline && !l->unknown)
        return defer_for_srcline(ps, frames, l->count);
    return push_frames(ps, frames, l->count);
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
    return ps->po.srcline && !unknown ? defer_for_srcline(ps, ps->fr, nf)
                                      : push_frames(ps, ps->fr, nf);
}

/* perf right-aligns short comms when it prints no call chains: an indented
 * line may be an event line, unless its first word is an address. */
static size_t event_indent(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    if (i == 0)
        return 0;
    size_t j = i;
    while (j < n && is_lower_hex((unsigned char)s[j]))
        j++;
    return j == n || is_ws((unsigned char)s[j]) ? n : i;
}

static const char *combined_split(const struct event_head *ev);

static bool is_combined(const struct event_head *ev)
{
    return combined_split(ev) != NULL;
}

/* An event line without a period/event suffix may carry a frame:
 * "comm pid time: 1 cycles:u:  ffff sym (mod)". */
static const char *combined_split(const struct event_head *ev)
{
    const char *s = ev->rest, *end = ev->rest + ev->rest_len;
    while (s < end) {
        const char *tok = s;
        while (s < end && !is_ws((unsigned char)*s))
            s++;
        size_t tl = (size_t)(s - tok);
        while (s < end && is_ws((unsigned char)*s))
            s++;
        if (tl < 2 || tok[tl - 1] != ':')
            continue;
        bool stamp = true;
        for (size_t k = 0; k + 1 < tl; k++)
            stamp = stamp && (is_digit((unsigned char)tok[k]) || tok[k] == '.');
        if (stamp)
            continue;
        /* tok is the event; the rest must be "HEX sym (mod)" */
        const char *x = s;
        while (x < end && ((*x >= '0' && *x <= '9') || (*x >= 'a' && *x <= 'f')))
            x++;
        struct frame_line f;
        if (x == s || x == end || !is_ws((unsigned char)*x) ||
            !parse_frame(s, (size_t)(end - s), &f))
            return NULL;
        return s;
    }
    return NULL;
}

static int on_frame(struct perf_parser *ps, const char *s, size_t n)
{
    size_t i, j;
    scan_address(s, n, &i, &j);
    return on_frame_at(ps, s, n, i, j);
}

static int on_other_line(struct perf_parser *ps, const char *s, size_t n, size_t i, size_t j,
                         bool address);

static int on_line(struct perf_parser *ps, const char *s, size_t n)
{
    if (n > 0 && s[n - 1] == '\r')
        n--;
    if (ps->pend.active) {
        if (n > 0 && !(n > 0 && s[0] == '#'))
            return finish_pending(ps, s, n);
        int err = finish_pending(ps, "", 0);
        if (err)
            return err;
    }
    if (n > 0 && s[0] == '#')
        return 0;
    if (n == 0)
        return end_sample(ps);
    /* An indented line whose first word is an address is a frame (the usual
     * case, decided without looking further); any other line may be an event. */
    size_t i = 0, j;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    for (j = i; j < n && is_word((unsigned char)s[j]); j++)
        if (!is_lower_hex((unsigned char)s[j]))
            break;
    bool address = i > 0 && j > i && (j == n || is_ws((unsigned char)s[j]));
    if (address && ps->in_sample)
        return on_frame_at(ps, s, n, i, j);
    return on_other_line(ps, s, n, i, j, address);
}

/* Event lines, and the rarer lines that are neither an event nor a frame
 * in a sample: out of the hot loop, which then stays small. */
static __attribute__((noinline)) int on_other_line(struct perf_parser *ps, const char *s, size_t n,
                                                   size_t i, size_t j, bool address)
{
    while (j < n && is_word((unsigned char)s[j]))
        j++;
    struct event_head ev;
    size_t lead = address ? n : i;
    if (lead < n && parse_event_head(s + lead, n - lead, &ev)) {
        const char *e;
        size_t el;
        int64_t per;
        bool named = parse_event_name(s, n, &e, &el, &per);
        const char *frame = named ? NULL : combined_split(&ev);
        if (named || frame || (lead == 0 && bare_event_rest(ev.rest, ev.rest_len))) {
            /* a combined line's event and period are before its frame:
             * one rule for every sample, weighed by its period */
            int err = start_sample(ps, &ev, s, frame ? (size_t)(frame - s) : n);
            if (!err && ps->keep && frame)
                err = on_frame(ps, frame, (size_t)(s + n - frame));
            return err;
        }
    }
    if (!ps->in_sample) {
        /* frames outside a sample: after a filtered or missing event line */
        struct frame_line f;
        if (!parse_frame(s, n, &f))
            warn_line(ps, s, n,
                      "unrecognized line (expected an event line such as "
                      "\"comm 123 [000] 1.000: 1000 cycles:\")");
        return 0;
    }
    return on_frame_at(ps, s, n, i, j);
}

static int parse_chunk(struct perf_parser *ps, const struct ember_chunk *c)
{
    const char *p = c->data, *end = c->data + c->len;
    ps->line = c->first_line;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
        /* perf script ends every line: a last line without one was cut
         * (chunks end at line ends, so only the input's end has none) */
        if (!nl && p[0] != '#' && (n > 1 || (n == 1 && p[0] != '\r')))
            return ember_diag_set(ps->d, -EINVAL, ps->file, ps->line,
                                  "truncated input: the last line has no line end (the input "
                                  "ends inside %s)",
                                  ps->in_sample ? "a sample's stack" : "an event line");
        int err = on_line(ps, p, n);
        if (err)
            return err;
        ps->line++;
        p += n + 1;
    }
    return 0;
}

static int parser_init(struct perf_parser *ps, struct ember_profile *p,
                       const struct ember_read_opts *o, struct ember_read_stats *st,
                       const char *file, struct ember_diag *d)
{
    memset(ps, 0, sizeof(*ps));
    ps->o = o;
    ps->p = p;
    ps->st = st;
    ps->file = file;
    ps->d = d;
    ps->po = ember_perf_opts_of(o);
    if (ps->po.event_filter) {
        copy_name(ps->filter, sizeof(ps->filter), ps->po.event_filter, strlen(ps->po.event_filter));
        ps->filter_len = strlen(ps->filter);
        ps->have_filter = true;
        copy_name(st->kept_event, sizeof(st->kept_event), ps->filter, ps->filter_len);
    }
    /* named for what they are at the end (set_unit) */
    int err = ember_profile_value(p, "samples", "count", &ps->vsamples);
    if (!err)
        err = ember_profile_value(p, PERIOD_VALUE, "count", &ps->vperiod);
    if (!err)
        err = cache_init(&ps->cache);
    if (!err && ps->po.inline_frames)
        err = ember_symbolizer_new(&ps->sym);
    return err;
}

static void parser_release(struct perf_parser *ps)
{
    cache_release(&ps->cache);
    free(ps->pend.ids);
    free(ps->pend.join);
    free(ps->stack);
    free(ps->buf);
    free(ps->fr);
    ember_symbolizer_free(ps->sym);
}

static int parser_finish(struct perf_parser *ps)
{
    int err = 0;
    if (ps->pend.active)
        err = finish_pending(ps, "", 0);
    return err ? err : end_sample(ps);
}

/* ---- threads ---------------------------------------------------------- */

struct pool {
    pthread_mutex_t lock;
    struct ember_input *in;
    const struct ember_read_opts *o;
    const char *filter;
    bool done;
    int err;
    struct ember_diag d;
};

struct worker {
    struct pool *pool;
    struct ember_profile *p;
    struct ember_read_stats st;
    uint64_t other_line; /* where st.other_event was seen: the input's first wins */
    bool weighed;
    pthread_t tid;
};

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    struct pool *pl = w->pool;
    struct ember_read_opts o = *pl->o;
    ember_read_opts_set(&o, "event-filter", pl->filter); /* every worker the same one */
    struct perf_parser ps;
    struct ember_chunk c = {0};
    struct ember_diag d;
    ember_diag_clear(&d);
    int err = parser_init(&ps, w->p, &o, &w->st, ember_input_name(pl->in), &d);
    while (!err) {
        pthread_mutex_lock(&pl->lock);
        int r = pl->done || pl->err ? 0 : ember_input_read_chunk(pl->in, &c, EMBER_CUT_SAMPLE, &d);
        if (r <= 0)
            pl->done = true;
        if (r > 0 && o.progress)
            o.progress(o.progress_ctx, pl->in);
        pthread_mutex_unlock(&pl->lock);
        if (r < 0)
            err = r;
        if (r <= 0)
            break;
        err = parse_chunk(&ps, &c);
        if (!err)
            err = parser_finish(&ps);
    }
    w->weighed = ps.weighed;
    w->other_line = ps.other_line;
    parser_release(&ps);
    ember_chunk_release(&c);
    if (err) {
        pthread_mutex_lock(&pl->lock);
        if (!pl->err) {
            pl->err = err;
            pl->d = d;
        }
        pthread_mutex_unlock(&pl->lock);
    }
    return NULL;
}

/* The first event named in the input decides the default filter: find it in
 * the first bytes so that every thread applies the same one. */
static bool first_event(struct ember_input *in, char *out, size_t cap, struct ember_diag *d)
{
    const char *data;
    size_t len;
    if (ember_input_peek(in, &data, &len, d) < 0)
        return false;
    const char *p = data, *end = data + len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl)
            return false;
        struct event_head ev;
        const char *e;
        size_t el;
        int64_t per;
        size_t n = (size_t)(nl - p);
        if (p[0] != '#' && parse_event_head(p, n, &ev)) {
            const char *frame = combined_split(&ev);
            if (parse_event_name(p, frame ? (size_t)(frame - p) : n, &e, &el, &per)) {
                copy_name(out, cap, e, el);
                return true;
            }
        }
        p = nl + 1;
    }
    return false;
}

/* The values: samples (a count), and the periods' sum, shown. A sample's
 * period is the event's count since the last sample, nanoseconds for the
 * clock events, which pprof calls cpu time. Without periods, each sample
 * counts one: samples alone. */
static void set_unit(struct ember_profile *p, const char *event, bool weighed)
{
    char base[128];
    unsigned vp, vs;
    if (ember_profile_value(p, PERIOD_VALUE, "count", &vp) < 0 ||
        ember_profile_value(p, "samples", "count", &vs) < 0)
        return;
    copy_name(base, sizeof(base), event, ember_perf_event_base_len(event, strlen(event)));
    if (!weighed || !base[0]) {
        ember_profile_select_index(p, vs);
        ember_profile_value_drop(p, vp);
        return;
    }
    char type[EMBER_UNIT_MAX];
    const char *unit;
    ember_perf_period_value(event, strlen(event), type, sizeof(type), &unit);
    ember_profile_value_rename(p, vp, type, unit);
    ember_profile_select_index(p, vp);
}

static int read_threaded(struct ember_profile *p, struct ember_input *in,
                         const struct ember_read_opts *o, struct ember_read_stats *st,
                         struct ember_diag *d, const char *filter)
{
    unsigned n = o->threads;
    struct pool pl = {.in = in, .o = o, .filter = filter};
    struct worker *w = calloc(n, sizeof(*w));
    int err = w ? 0 : -ENOMEM;
    pthread_mutex_init(&pl.lock, NULL);
    ember_diag_clear(&pl.d);
    unsigned started = 0;
    for (; started < n && !err; started++) {
        w[started].pool = &pl;
        w[started].p = ember_profile_new();
        if (!w[started].p || pthread_create(&w[started].tid, NULL, worker_main, &w[started])) {
            ember_profile_free(w[started].p);
            err = -ENOMEM;
            break;
        }
    }
    bool weighed = false;
    uint64_t other_line = 0;
    for (unsigned i = 0; i < started; i++) {
        pthread_join(w[i].tid, NULL);
        weighed |= w[i].weighed;
        if (!err && !pl.err)
            err = ember_profile_merge(p, w[i].p);
        st->samples += w[i].st.samples;
        st->skipped += w[i].st.skipped;
        st->filtered += w[i].st.filtered;
        /* the first other event of the input, whichever worker read it */
        if (w[i].st.other_event[0] && (!st->other_event[0] || w[i].other_line < other_line)) {
            memcpy(st->other_event, w[i].st.other_event, sizeof(st->other_event));
            other_line = w[i].other_line;
        }
        ember_profile_free(w[i].p);
    }
    copy_name(st->kept_event, sizeof(st->kept_event), filter, strlen(filter));
    set_unit(p, st->kept_event, weighed);
    pthread_mutex_destroy(&pl.lock);
    free(w);
    if (pl.err) {
        if (d)
            *d = pl.d;
        return pl.err;
    }
    return err;
}

static int perf_read(struct ember_profile *p, struct ember_input *in,
                     const struct ember_read_opts *o, struct ember_read_stats *st,
                     struct ember_diag *d)
{
    char filter[128];
    struct ember_perf_opts po = ember_perf_opts_of(o);
    if (o->threads > 1 && !po.srcline && !ember_profile_has_sequence(p)) {
        if (po.event_filter)
            return read_threaded(p, in, o, st, d, po.event_filter);
        if (first_event(in, filter, sizeof(filter), d))
            return read_threaded(p, in, o, st, d, filter);
    }
    struct perf_parser ps;
    struct ember_chunk c = {0};
    int err = parser_init(&ps, p, o, st, ember_input_name(in), d);
    while (!err) {
        int r = ember_input_read_chunk(in, &c, EMBER_CUT_LINE, d);
        if (r <= 0) {
            err = r;
            break;
        }
        err = parse_chunk(&ps, &c);
        if (o->progress)
            o->progress(o->progress_ctx, in);
    }
    if (!err)
        err = parser_finish(&ps);
    set_unit(p, st->kept_event, ps.weighed);
    parser_release(&ps);
    ember_chunk_release(&c);
    return err;
}

/* Is this line an event line (as on_line decides)? A ';' in the first
 * word is a folded stack ("a;b;c 1 3", difffolded's two counts, would
 * otherwise pass for "comm pid time"). */
bool ember_perf_probe_event(const char *s, size_t n)
{
    const char *semi = memchr(s, ';', n), *sp = memchr(s, ' ', n);
    if (semi && (!sp || semi < sp))
        return false;
    struct event_head ev;
    const char *e;
    size_t el;
    int64_t per;
    size_t lead = event_indent(s, n);
    if (lead >= n || !parse_event_head(s + lead, n - lead, &ev))
        return false;
    return parse_event_name(s, n, &e, &el, &per) || is_combined(&ev) ||
           (lead == 0 && bare_event_rest(ev.rest, ev.rest_len));
}

bool ember_perf_probe_frame(const char *s, size_t n)
{
    struct frame_line f;
    return parse_frame(s, n, &f);
}

const struct ember_format ember_format_perf = {
    .name = "perf",
    .description = "`perf script` text (stackcollapse-perf.pl's input)",
    .options = ember_perf_options,
    .options_heading = EMBER_PERF_OPTIONS_HEADING,
    .probe = ember_perf_probe,
    .read = perf_read,
};
