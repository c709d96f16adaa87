/*
 * perf_names.c - stackcollapse-perf.pl's naming of perf symbols, shared by
 * the perf script and perf.data readers (see perf_names.h).
 */
#include "perf_names.h"
#include "perf_tidy.h"
#include "util/vec.h"

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

bool ember_perf_same_event(const char *a, size_t alen, const char *b, size_t blen)
{
    alen = ember_perf_event_base_len(a, alen);
    blen = ember_perf_event_base_len(b, blen);
    return alen == blen && memcmp(a, b, alen) == 0;
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
