/*
 * perf_names.c - stackcollapse-perf.pl's naming of perf symbols, shared by
 * the perf script and perf.data readers (see perf_names.h).
 */
#include "read/perf/perf_names.h"
#include "read/perf/perf_tidy.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

bool ember_perf_parenthesized_only(const char *s, size_t n)
{
    if (n < 2 || s[0] != '(' || s[n - 1] != ')')
        return false;
    int depth = 0;
    for (size_t i = 0; i < n; i++) {
        depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
        if (depth == 0)
            return i == n - 1;
    }
    return false;
}

size_t ember_perf_event_base_len(const char *name, size_t n)
{
    const char *colon = memrchr(name, ':', n);
    if (!colon || colon == name)
        return n;
    size_t k = (size_t)(colon - name) + 1;
    if (k == n)
        return n;
    for (size_t i = k; i < n; i++)
        if (!strchr("ukhIGHpPSDWeb", name[i]))
            return n;
    return k - 1;
}

/* An event name's parts, perf's syntax: NAME, NAME:MODS, NAME/TERMS/ or
 * NAME/TERMS/MODS (also /TERMS/:MODS); no modifier letters after the
 * terms, or a second part that is not modifiers ("sched:sched_switch"): all
 * of it is the name. */
struct event_parts {
    const char *terms, *mods;
    size_t name_len, terms_len, mods_len;
};

static bool all_modifiers(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strchr("ukhIGHpPSDWeb", s[i]))
            return false;
    return true;
}

static void event_split(const char *s, size_t n, struct event_parts *p)
{
    const char *open = memchr(s, '/', n), *close = memrchr(s, '/', n);
    memset(p, 0, sizeof(*p));
    p->name_len = n;
    if (open && close > open) {
        const char *mods = close + 1 + (close + 1 < s + n && close[1] == ':');
        if (!all_modifiers(mods, (size_t)(s + n - mods)))
            return;
        p->name_len = (size_t)(open - s);
        p->terms = open + 1, p->terms_len = (size_t)(close - open - 1);
        p->mods = mods, p->mods_len = (size_t)(s + n - mods);
        return;
    }
    p->name_len = ember_perf_event_base_len(s, n);
    if (p->name_len < n)
        p->mods = s + p->name_len + 1, p->mods_len = n - p->name_len - 1;
}

/* The length of a term's key: "period=100" has "period". */
static size_t key_len(const char *t, size_t n)
{
    const char *eq = memchr(t, '=', n);
    return eq ? (size_t)(eq - t) : n;
}

/* perf's terms that set how an event is sampled, not which event it is:
 * an event with them is still the event named without them. */
static bool setting_term(const char *t, size_t n)
{
    static const char *const settings[] = {
        "period",    "freq",         "time",      "call-graph", "stack-size",
        "inherit",   "no-inherit",   "max-stack", "nr",         "max-events",
        "overwrite", "no-overwrite", "percore",   "aux-output", "aux-sample-size",
        "metric-id", "name",
    };
    size_t key = key_len(t, n);
    for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++)
        if (strlen(settings[i]) == key && memcmp(settings[i], t, key) == 0)
            return true;
    return false;
}

/* The term of list whose key is term's: its start, or NULL; its length. */
static const char *find_term(const char *list, size_t n, const char *term, size_t tn, size_t *len)
{
    size_t key = key_len(term, tn);
    if (!n) /* list may be NULL then: no pointer arithmetic on it */
        return NULL;
    for (const char *t = list, *end = list + n; t < end;) {
        const char *comma = memchr(t, ',', (size_t)(end - t));
        *len = (size_t)((comma ? comma : end) - t);
        if (key_len(t, *len) == key && memcmp(t, term, key) == 0)
            return t;
        t += *len + 1;
    }
    return NULL;
}

/* Every term of a is b's too, with its value, or a setting b has not. */
static bool terms_within(const struct event_parts *a, const struct event_parts *b)
{
    if (!a->terms_len) /* terms may be NULL then */
        return true;
    for (const char *t = a->terms, *end = a->terms + a->terms_len; t < end;) {
        const char *comma = memchr(t, ',', (size_t)(end - t));
        size_t len = (size_t)((comma ? comma : end) - t), blen;
        const char *in_b = find_term(b->terms, b->terms_len, t, len, &blen);
        if (in_b ? blen != len || memcmp(in_b, t, len) != 0 : !setting_term(t, len))
            return false;
        t += len + 1;
    }
    return true;
}

bool ember_perf_same_event(const char *a, size_t alen, const char *b, size_t blen)
{
    struct event_parts x, y;
    event_split(a, alen, &x);
    event_split(b, blen, &y);
    if (x.name_len != y.name_len || memcmp(a, b, x.name_len) != 0)
        return false;
    if (x.mods_len && y.mods_len &&
        (x.mods_len != y.mods_len || memcmp(x.mods, y.mods, x.mods_len) != 0))
        return false;
    return terms_within(&x, &y) && terms_within(&y, &x);
}

void ember_perf_period_value(const char *event, size_t len, char *type, size_t cap,
                             const char **unit)
{
    snprintf(type, cap, "%.*s", (int)ember_perf_event_base_len(event, len), event);
    /* "cpu-clock", "task-clock", and with perf's terms: "cpu-clock/freq=999/" */
    bool clock = strcmp(type, "cpu-clock") == 0 || strcmp(type, "task-clock") == 0 ||
                 strncmp(type, "cpu-clock/", 10) == 0 || strncmp(type, "task-clock/", 11) == 0;
    *unit = clock ? "nanoseconds" : "count";
    if (clock)
        snprintf(type, cap, "cpu");
    else if (strcmp(type, "samples") == 0)
        snprintf(type, cap, "events");
}

/* "[module]" (its file name) for a symbol perf did not know, with the
 * address for --addrs; "[unknown]" when the module is not known either. */
static size_t unknown_name(char *b, const char *mod, size_t ml, const char *pc, size_t pcl,
                           bool addrs, bool *unknown)
{
    size_t len = 0;
    if (ml == 9 && memcmp(mod, "[unknown]", 9) == 0) {
        mod = "unknown", ml = 7;
        *unknown = true;
    } else {
        const char *slash = memrchr(mod, '/', ml);
        if (slash) {
            ml -= (size_t)(slash + 1 - mod);
            mod = slash + 1;
        }
    }
    b[len++] = '[';
    memcpy(b + len, mod, ml);
    len += ml;
    if (addrs) {
        memcpy(b + len, " <", 2);
        memcpy(b + len + 2, pc, pcl);
        len += 2 + pcl;
        b[len++] = '>';
    }
    b[len++] = ']';
    return len;
}

size_t ember_perf_name_piece(char *b, const char *piece, size_t plen, const char *mod, size_t ml,
                             const char *pc, size_t pcl, bool inlined, bool java,
                             const struct ember_perf_opts *po, bool *unknown,
                             enum ember_frame_kind *ann)
{
    size_t len;
    if (plen == 9 && memcmp(piece, "[unknown]", 9) == 0) {
        len = unknown_name(b, mod, ml, pc, pcl, po->include_addrs, unknown);
    } else {
        memcpy(b, piece, plen);
        len = plen;
    }
    b[len] = '\0';
    /* Rust decoding comes last so that the lifetimes it produces ('a)
     * survive FlameGraph's quote stripping. */
    len = ember_tidy_generic(b, len);
    len = ember_tidy_rust(b, len);
    if (java)
        len = ember_tidy_java(b, len);
    *ann = EMBER_FRAME_USER;
    if (inlined) {
        if (!memmem(b, len, "_[i]", 4))
            *ann = EMBER_FRAME_INLINED;
    } else if (po->annotate_kernel && ember_module_is_kernel(mod, ml)) {
        *ann = EMBER_FRAME_KERNEL;
    } else if (po->annotate_jit && ember_module_is_jit(mod, ml)) {
        if (!memmem(b, len, "_[j]", 4))
            *ann = EMBER_FRAME_JIT;
    }
    return len;
}

int ember_perf_inline_frame(const struct ember_symbol_frame *sf, bool context, char **buf,
                            size_t *cap, struct ember_frame *rec)
{
    *rec = (struct ember_frame){
        .name = sf->function,
        .name_len = strlen(sf->function),
        .file = sf->file,
        .file_len = sf->file ? strlen(sf->file) : 0,
        .line = sf->line,
        .column = sf->column,
        .module = EMBER_NO_MODULE,
        .kind = sf->inlined ? EMBER_FRAME_INLINED : EMBER_FRAME_USER,
        .place_in_name = context,
        .pid = -1,
        .tid = -1,
    };
    if (sf->file || !context)
        return 0;
    rec->name_len = ember_symbol_frame_context(sf, NULL, 0);
    if (EMBER_VEC_RESERVE(*buf, *cap, rec->name_len + 1) < 0)
        return -ENOMEM;
    ember_symbol_frame_context(sf, *buf, rec->name_len + 1);
    rec->name = *buf;
    rec->place_in_name = false;
    return 0;
}

int ember_perf_intern_root(struct ember_profile *p, const char *name, size_t len, bool thread,
                           uint32_t *id)
{
    struct ember_frame fr = {.name = name,
                             .name_len = len,
                             .module = EMBER_NO_MODULE,
                             .kind = thread ? EMBER_FRAME_THREAD : EMBER_FRAME_PROCESS,
                             .pid = -1,
                             .tid = -1};
    return ember_profile_intern_frame(p, &fr, id);
}
