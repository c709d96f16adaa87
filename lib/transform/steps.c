/*
 * steps.c - the transforms of ember/transform.h, applied in one pass over
 * the profile's distinct stacks (ember_profile_map).
 *
 * What a step decides about a frame depends only on its name, so each
 * source frame is looked at once: its demangled name, re-interned in the
 * new profile, and one bit per kind of rule it matches (struct frame_info,
 * filled on first use). A stack is then rewritten with array work only,
 * and regexes run once per distinct name, not once per sample.
 */
#include "ember/transform.h"
#include "symbol/demangle.h"
#include "base/diag.h"
#include "base/vec.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

/* Kinds of regex rule, also the bits of frame_info.flags. */
enum { FOCUS, IGNORE, HIDE, COLLAPSE, PRUNE, NKINDS };

struct rule {
    pcre2_code *re;
    char *name; /* collapse: the folded frame's name; NULL: the match's own */
};

struct ember_transform {
    bool demangle, merge_threads, flatten, reverse;
    char *skip_after;
    struct rule *rules[NKINDS];
    size_t nrules[NKINDS], caps[NKINDS];
    pcre2_match_data *md;
};

/* OCaml's GC, entered from OCaml code: what --collapse-gc folds into one
 * "[GC]" frame under the allocating function (OCaml 4 and 5 runtimes). */
static const char gc_regex[] =
    "^(caml_call_gc|caml_alloc_small_dispatch|caml_garbage_collection|caml_poll_gc_work|"
    "caml_do_pending_actions(_exn)?|caml_process_pending_actions(_with_root)?(_exn)?|"
    "caml_major_collection_slice|caml_minor_collection|caml_empty_minor_heaps?(_once)?|"
    "caml_gc_dispatch|caml_check_urgent_gc|caml_do_some_work|caml_handle_gc_interrupt)$";

struct ember_transform *ember_transform_new(void)
{
    struct ember_transform *t = calloc(1, sizeof(*t));
    if (t && !(t->md = pcre2_match_data_create(1, NULL))) {
        free(t);
        t = NULL;
    }
    return t;
}

void ember_transform_free(struct ember_transform *t)
{
    if (!t)
        return;
    for (int k = 0; k < NKINDS; k++) {
        for (size_t i = 0; i < t->nrules[k]; i++) {
            pcre2_code_free(t->rules[k][i].re);
            free(t->rules[k][i].name);
        }
        free(t->rules[k]);
    }
    pcre2_match_data_free(t->md);
    free(t->skip_after);
    free(t);
}

bool ember_transform_empty(const struct ember_transform *t)
{
    bool any = t->demangle || t->merge_threads || t->flatten || t->reverse || t->skip_after;
    for (int k = 0; k < NKINDS; k++)
        any |= t->nrules[k] > 0;
    return !any;
}

static int add_rule(struct ember_transform *t, int kind, const char *re, size_t len,
                    const char *name, struct ember_diag *d)
{
    int code;
    PCRE2_SIZE at;
    pcre2_code *c = pcre2_compile((PCRE2_SPTR)re, len, 0, &code, &at, NULL);
    if (!c) {
        PCRE2_UCHAR msg[256];
        pcre2_get_error_message(code, msg, sizeof(msg));
        return ember_diag_set(d, -EINVAL, NULL, 0, "bad regex '%.*s' at offset %zu: %s", (int)len,
                              re, (size_t)at, (const char *)msg);
    }
    pcre2_jit_compile(c, PCRE2_JIT_COMPLETE); /* faster when available; fine without */
    char *copy = name ? strdup(name) : NULL;
    if ((name && !copy) || EMBER_VEC_RESERVE(t->rules[kind], t->caps[kind], t->nrules[kind] + 1)) {
        free(copy);
        pcre2_code_free(c);
        return -ENOMEM;
    }
    t->rules[kind][t->nrules[kind]++] = (struct rule){c, copy};
    return 0;
}

int ember_transform_add(struct ember_transform *t, enum ember_step step, const char *arg,
                        struct ember_diag *d)
{
    static const int kinds[] = {[EMBER_STEP_FOCUS] = FOCUS,
                                [EMBER_STEP_IGNORE] = IGNORE,
                                [EMBER_STEP_HIDE] = HIDE,
                                [EMBER_STEP_COLLAPSE] = COLLAPSE,
                                [EMBER_STEP_PRUNE_FROM] = PRUNE};
    switch (step) {
    case EMBER_STEP_DEMANGLE:
        t->demangle = true;
        return 0;
    case EMBER_STEP_MERGE_THREADS:
        t->merge_threads = true;
        return 0;
    case EMBER_STEP_FLATTEN_RECURSION:
        t->flatten = true;
        return 0;
    case EMBER_STEP_REVERSE:
        t->reverse = true;
        return 0;
    case EMBER_STEP_SKIP_AFTER:
        free(t->skip_after);
        return (t->skip_after = strdup(arg ? arg : "")) ? 0 : -ENOMEM;
    case EMBER_STEP_COLLAPSE_GC:
        return add_rule(t, COLLAPSE, gc_regex, sizeof(gc_regex) - 1, "[GC]", d);
    case EMBER_STEP_COLLAPSE: {
        const char *eq = strrchr(arg, '=');
        if (eq && eq[1] == '\0')
            return ember_diag_set(d, -EINVAL, NULL, 0,
                                  "'%s': nothing after '=' to name the "
                                  "collapsed frame",
                                  arg);
        return add_rule(t, COLLAPSE, arg, eq ? (size_t)(eq - arg) : strlen(arg), eq ? eq + 1 : NULL,
                        d);
    }
    case EMBER_STEP_FOCUS:
    case EMBER_STEP_IGNORE:
    case EMBER_STEP_HIDE:
    case EMBER_STEP_PRUNE_FROM:
        return add_rule(t, kinds[step], arg, strlen(arg), NULL, d);
    }
    return -EINVAL;
}

/* ---- applying ----------------------------------------------------------- */

struct frame_info {
    uint32_t name;   /* the frame in the new profile */
    uint32_t merged; /* the same as a root frame, with --merge-threads */
    uint8_t flags;   /* 1 << kind for each kind of rule matched */
    bool skip;       /* is the --skip-after frame */
    bool known;
    uint16_t collapse; /* the collapse rule matched first, + 1 */
};

struct apply {
    const struct ember_transform *t;
    struct frame_info *info; /* by source frame */
    uint32_t *stamp;         /* flatten: the stack (now) in which a frame was pushed */
    size_t pcap;
    uint32_t now;
};

static bool matches(const struct ember_transform *t, const struct rule *r, const char *s, size_t n)
{
    return pcre2_match(r->re, (PCRE2_SPTR)s, n, 0, 0, t->md, NULL) >= 0;
}

/* "comm-PID/TID" (perf --tid) as "comm-PID"; 0 when not of that form. */
static size_t process_of(const char *s, size_t n)
{
    const char *slash = memrchr(s, '/', n),
               *dash = slash ? memrchr(s, '-', (size_t)(slash - s)) : NULL;
    if (!dash || slash == s + n - 1 || slash == dash + 1)
        return 0;
    for (const char *p = dash + 1; p < s + n; p++)
        if (p != slash && (*p < '0' || *p > '9'))
            return 0;
    return (size_t)(slash - s);
}

/* --merge-threads: a thread's frame becomes its process's ("comm-PID"),
 * by its record, or by its name when read as text ("comm-PID/TID"). */
static int merged_process(struct ember_profile *dst, const struct ember_frame *rec, const char *s,
                          size_t n, uint32_t *merged)
{
    bool task =
        rec->kind_in_name && (rec->kind == EMBER_FRAME_THREAD || rec->kind == EMBER_FRAME_PROCESS);
    /* perf's "comm-PID/TID" ("comm-?/TID": which process?) */
    if (task && rec->kind == EMBER_FRAME_THREAD && rec->pid >= 0) {
        struct ember_frame proc = {.name = s,
                                   .name_len = n,
                                   .module = EMBER_NO_MODULE,
                                   .kind = EMBER_FRAME_PROCESS,
                                   .pid = rec->pid,
                                   .kind_in_name = true,
                                   .tid = -1};
        return ember_profile_intern_frame(dst, &proc, merged);
    }
    size_t pn = task ? 0 : process_of(s, n);
    return pn ? ember_profile_intern(dst, s, pn, merged) : 0;
}

static int learn_frame(struct apply *a, struct ember_profile *dst, const struct ember_profile *src,
                       uint32_t f)
{
    const struct ember_transform *t = a->t;
    struct frame_info *fi = &a->info[f];
    size_t n;
    const char *s = ember_profile_frame_name(src, f, &n);
    char *demangled = t->demangle ? ember_demangle(s, n, EMBER_DEMANGLE_TRANSFORM) : NULL;
    if (demangled) {
        s = demangled;
        n = strlen(demangled);
    }
    /* the frame's record goes with its new name */
    int err = ember_profile_frame_copy(dst, src, f, s, n, &fi->name);
    fi->merged = fi->name;
    struct ember_frame rec;
    ember_profile_frame(src, f, &rec);
    if (!err && t->merge_threads)
        err = merged_process(dst, &rec, s, n, &fi->merged);
    /* rules see the name as views show it ("f_[k]", "f:file.c:12") */
    char *spelled = NULL;
    if (!err && ember_frame_spelled_folded(&rec)) {
        rec.name = s;
        rec.name_len = n;
        size_t sn = ember_frame_spell_folded(&rec, NULL, 0);
        if (!(spelled = malloc(sn + 1)))
            err = -ENOMEM;
        else
            n = ember_frame_spell_folded(&rec, spelled, sn + 1), s = spelled;
    }
    for (int k = 0; k < NKINDS && !err; k++)
        for (size_t i = 0; i < t->nrules[k]; i++)
            if (matches(t, &t->rules[k][i], s, n)) {
                fi->flags |= (uint8_t)(1u << k);
                if (k == COLLAPSE && !fi->collapse)
                    fi->collapse = (uint16_t)(i + 1);
                if (k != COLLAPSE)
                    break;
            }
    fi->skip = t->skip_after && strlen(t->skip_after) == n && memcmp(t->skip_after, s, n) == 0;
    fi->known = !err;
    free(spelled);
    free(demangled);
    return err;
}

/* Frames [from, n) of the stack after skip-after; false: leave it out. */
static bool keep_stack(const struct apply *a, const uint32_t *in, size_t n, size_t *from)
{
    const struct ember_transform *t = a->t;
    *from = 0;
    if (t->skip_after)
        for (size_t i = n; i-- > 0;)
            if (a->info[in[i]].skip) {
                *from = i;
                break;
            }
    bool focus = t->nrules[FOCUS] == 0;
    for (size_t i = *from; i < n; i++) {
        uint8_t fl = a->info[in[i]].flags;
        if (fl & (1u << IGNORE))
            return false;
        focus |= (fl & (1u << FOCUS)) != 0;
    }
    return focus;
}

static int grow_stamps(struct apply *a, uint32_t frames)
{
    if (frames <= a->pcap)
        return 0;
    size_t cap = frames * 2;
    uint32_t *stamp = realloc(a->stamp, cap * sizeof(*stamp));
    if (!stamp)
        return -ENOMEM;
    memset(stamp + a->pcap, 0, (cap - a->pcap) * sizeof(*stamp));
    a->stamp = stamp;
    a->pcap = cap;
    return 0;
}

/* Appends frame f to out. With flatten, a frame already on the stack is
 * left out: each function then appears once per stack, at its first (most
 * root-ward) call, and its inclusive weight is its cumulative weight as
 * pprof counts it, once per stack, in direct and mutual recursion alike
 * (main;r0;r2;r1;r0;leaf becomes main;r0;r2;r1;leaf). */
static int push(struct apply *a, struct ember_profile *dst, struct ember_stack_out *out, uint32_t f)
{
    if (a->t->flatten) {
        int err = grow_stamps(a, ember_profile_frame_count(dst));
        if (err)
            return err;
        if (a->stamp[f] == a->now)
            return 0;
        a->stamp[f] = a->now;
    }
    return ember_stack_out_push(out, f);
}

static int rewrite_stack(void *ctx, struct ember_profile *dst, const struct ember_profile *src,
                         const uint32_t *in, size_t n, struct ember_stack_out *out)
{
    struct apply *a = ctx;
    int err = 0;
    for (size_t i = 0; i < n && !err; i++)
        if (!a->info[in[i]].known)
            err = learn_frame(a, dst, src, in[i]);
    size_t from;
    if (err || !keep_stack(a, in, n, &from)) {
        if (!err)
            ember_stack_out_drop(out);
        return err;
    }
    a->now++;
    for (size_t i = from; i < n && !err; i++) {
        const struct frame_info *fi = &a->info[in[i]];
        if (fi->flags & (1u << HIDE))
            continue;
        if (fi->collapse) {
            const char *name = a->t->rules[COLLAPSE][fi->collapse - 1].name;
            uint32_t f = fi->name;
            if (name)
                err = ember_profile_intern(dst, name, strlen(name), &f);
            if (!err)
                err = push(a, dst, out, f);
            break;
        }
        err = push(a, dst, out, i == 0 ? fi->merged : fi->name);
        if (fi->flags & (1u << PRUNE))
            break;
    }
    return err;
}

/* Replaces p by fn(p). */
static int replace(struct ember_profile *p,
                   int (*fn)(const struct ember_profile *, struct ember_profile **))
{
    struct ember_profile *out;
    int err = fn(p, &out);
    if (!err) {
        ember_profile_swap(p, out);
        ember_profile_free(out);
    }
    return err;
}

static bool rewrites_stacks(const struct ember_transform *t)
{
    struct ember_transform only = *t;
    only.reverse = false;
    return !ember_transform_empty(&only);
}

static int rewrite(const struct ember_transform *t, struct ember_profile *p)
{
    struct apply a = {.t = t};
    uint32_t nframes = ember_profile_frame_count(p);
    a.info = calloc(nframes ? nframes : 1, sizeof(*a.info));
    if (!a.info)
        return -ENOMEM;
    struct ember_profile *out;
    int err = ember_profile_map(p, rewrite_stack, &a, &out);
    if (!err) {
        ember_profile_swap(p, out);
        ember_profile_free(out);
    }
    free(a.info);
    free(a.stamp);
    return err;
}

int ember_transform_apply(const struct ember_transform *t, struct ember_profile *p)
{
    int err = rewrites_stacks(t) ? rewrite(t, p) : 0;
    return !err && t->reverse ? replace(p, ember_profile_reverse) : err;
}
