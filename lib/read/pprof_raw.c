/*
 * pprof_raw.c - the text of `go tool pprof -raw` (pprof's Profile.String()),
 * which FlameGraph's stackcollapse-go.pl reads:
 *
 *     PeriodType: cpu nanoseconds          header lines, and "# ..." comments
 *     Samples:
 *     samples/count cpu/nanoseconds        the sample types ("[dflt]" marks one)
 *              2   20000000: 1 2 3 4       values, then location ids, leaf first
 *                     bytes:[65536]        labels of the sample above
 *     Locations
 *          1: 0x4b0eab M=1 main.leaf /src/main.go:18 s=0
 *          6: 0x4b0ef8 M=1 main.small /src/main.go:23 s=0
 *                  main.alpha /src/main.go:26 s=0     inlined into its caller
 *     Mappings
 *
 * The rules of the script: the weight is one sample type's value, samples
 * of zero or less are left out, a location is named by its function, and
 * the stack is the samples' locations from the root.
 *
 * The samples come before the locations they name, so the reader keeps
 * each distinct stack of location ids, with its weight, in a scratch trie
 * (memory grows with distinct stacks, not with samples), and builds the
 * profile from it once the Locations section is read.
 *
 * Deliberate differences from the script (it reads the first function of
 * each location and ignores the rest):
 * - a location's inlined calls (its continuation lines) are frames too,
 *   callers of the first: "main.alpha;main.small", where the script shows
 *   "main.small" only;
 * - with several sample types the script wants --sample_index; ember takes
 *   the one pprof shows by default (marked "[dflt]", else the last), or the
 *   one --sample-type names (by name or index);
 * - a location without a function is named by its address ("0x45f468"),
 *   not by its number; "[F]" (folded) is not taken for a name; a C++ name
 *   with spaces is kept whole, not cut at its first space;
 * - a label line is never read as a sample (the script reads a label
 *   whose value holds ": " as one), a line that fits no rule is an error,
 *   and so are a cut input (below) and a sample naming a location the
 *   Locations section lacks (the script prints the location's number).
 *
 * Truncation: pprof prints its header ("Period: ..."), every section
 * header, the last one ("Mappings") even when it has no mappings, and ends
 * every line. So an input that has the header but ends before "Mappings",
 * or inside a line after "Samples:" and before "Mappings", was cut short:
 * an error. A cut among the mappings, which ember does not read,
 * loses nothing and is not looked for.
 *
 * Invariants: locs[] holds, per location, its frames innermost first in
 * frames[start, start + n); by_id maps a location id to its index in locs.
 */
#include "read/read_impl.h"
#include "read/lines.h"
#include "base/u64map.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>

enum section { HEADER, TYPES, SAMPLES, LOCATIONS, DONE };

struct location {
    uint32_t start, n;
    char addr[24]; /* "0x4b0eab": the name of a location without function */
};

struct raw_reader {
    struct ember_profile *p;
    const struct ember_lines_at *at;
    struct ember_profile *stacks; /* scratch trie: frames are location ids */
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    enum section section;
    bool seen_period;    /* pprof's header: what comes before "Samples:" */
    size_t ntypes, type; /* the number of sample types, the one read */
    uint64_t *ids;       /* the current sample's location ids */
    size_t nids, idcap;
    struct location *locs;
    size_t nlocs, lcap;
    uint32_t *frames;
    size_t nframes, fcap;
    struct ember_u64map by_id;
    uint64_t last; /* the last line: where errors found at the end are */
};

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

static bool starts_with(const char *s, size_t n, const char *lit)
{
    size_t k = strlen(lit);
    return n >= k && memcmp(s, lit, k) == 0;
}

static int bad(struct raw_reader *r, uint64_t line, const char *what, const char *s, size_t n)
{
    char q[200];
    ember_quote(q, sizeof(q), s, n, 120);
    return ember_diag_set(r->d, -EINVAL, r->file, line, "%s: \"%s\"", what, q);
}

/* Reads a decimal integer (with an optional '-') at s[*i], skipping blanks
 * before it. */
static bool read_int(const char *s, size_t n, size_t *i, int64_t *v)
{
    while (*i < n && is_space(s[*i]))
        (*i)++;
    bool neg = *i < n && s[*i] == '-';
    size_t start = *i + neg;
    int64_t x = 0;
    for (*i = start; *i < n && s[*i] >= '0' && s[*i] <= '9'; (*i)++) {
        if (x > (INT64_MAX - 9) / 10)
            return false;
        x = x * 10 + (s[*i] - '0');
    }
    *v = neg ? -x : x;
    return *i > start;
}

/* ---- the sample types ---- */

/* Does the word [w, w + n) name the type asked for ("cpu" for
 * "cpu/nanoseconds[dflt]"), or is it its index? */
static bool type_matches(const char *want, const char *w, size_t n, size_t index)
{
    char *end;
    unsigned long k = strtoul(want, &end, 10);
    if (*want && !*end)
        return k == index;
    const char *slash = memchr(w, '/', n);
    size_t tn = slash ? (size_t)(slash - w) : n;
    return strlen(want) == tn && memcmp(want, w, tn) == 0;
}

/* The profile measures the type read: "cpu/nanoseconds[dflt]" says what
 * and in what unit (for writers such as pprof's). */
static void set_unit(struct raw_reader *r, const char *s, size_t n)
{
    size_t k = 0, i = 0;
    for (;; k++) {
        while (i < n && is_space(s[i]))
            i++;
        if (k == r->type)
            break;
        while (i < n && !is_space(s[i]))
            i++;
    }
    size_t w = i;
    while (i < n && !is_space(s[i]) && s[i] != '[')
        i++;
    const char *slash = memchr(s + w, '/', i - w);
    char type[EMBER_UNIT_MAX], unit[EMBER_UNIT_MAX];
    if (!slash)
        return;
    snprintf(type, sizeof(type), "%.*s", (int)(slash - (s + w)), s + w);
    snprintf(unit, sizeof(unit), "%.*s", (int)(s + i - slash - 1), slash + 1);
    ember_profile_set_unit(r->p, type, unit);
}

static int types_line(struct raw_reader *r, const char *s, size_t n, uint64_t line)
{
    size_t dflt = SIZE_MAX, want = SIZE_MAX;
    r->ntypes = 0;
    for (size_t i = 0; i < n;) {
        while (i < n && is_space(s[i]))
            i++;
        size_t w = i;
        while (i < n && !is_space(s[i]))
            i++;
        if (i == w)
            break;
        if (memmem(s + w, i - w, "[dflt]", 6))
            dflt = r->ntypes;
        if (r->o->value && type_matches(r->o->value, s + w, i - w, r->ntypes))
            want = r->ntypes;
        r->ntypes++;
    }
    if (r->ntypes == 0)
        return bad(r, line, "expected the sample types after \"Samples:\"", s, n);
    if (r->o->value && want == SIZE_MAX) {
        char q[200];
        ember_quote(q, sizeof(q), s, n, 120);
        return ember_diag_set(r->d, -EINVAL, r->file, line,
                              "no sample type \"%s\" (by name or index) among \"%s\"", r->o->value,
                              q);
    }
    r->type = want != SIZE_MAX ? want : dflt != SIZE_MAX ? dflt : r->ntypes - 1;
    r->section = SAMPLES;
    set_unit(r, s, n);
    return 0;
}

/* ---- samples: into the scratch trie, root first ---- */

static int add_sample(struct raw_reader *r, int64_t weight, uint64_t line)
{
    if (weight <= 0 || r->nids == 0) {
        r->st->skipped++; /* nothing to draw, as the script drops them */
        return 0;
    }
    uint32_t node = EMBER_ROOT, frame;
    for (size_t i = r->nids; i-- > 0;) {
        int err =
            ember_profile_intern(r->stacks, (const char *)&r->ids[i], sizeof(r->ids[i]), &frame);
        if (!err)
            err = ember_profile_child(r->stacks, node, frame, &node);
        if (err)
            return err;
    }
    int err = ember_profile_add(r->stacks, node, 0, weight);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line, "sample values overflow a 64-bit total");
    if (!err)
        r->st->samples++;
    return err;
}

/* "   V1 V2 ...: ID ID ..." */
static int sample_line(struct raw_reader *r, const char *s, size_t n, uint64_t line)
{
    size_t i = 0;
    int64_t v, weight = 0;
    for (size_t k = 0; k < r->ntypes; k++) {
        if (!read_int(s, n, &i, &v))
            return -1;
        if (k == r->type)
            weight = v;
    }
    if (i >= n || s[i] != ':')
        return -1;
    r->nids = 0;
    for (i++; i < n;) {
        int64_t id;
        if (!read_int(s, n, &i, &id)) {
            while (i < n && is_space(s[i]))
                i++;
            if (i < n)
                return -1;
            break;
        }
        if (id < 0)
            return -1;
        if (EMBER_VEC_RESERVE(r->ids, r->idcap, r->nids + 1) < 0)
            return -ENOMEM;
        r->ids[r->nids++] = (uint64_t)id;
    }
    return add_sample(r, weight, line);
}

static int samples_line(struct raw_reader *r, const char *s, size_t n, uint64_t line)
{
    if (starts_with(s, n, "Locations")) {
        r->section = LOCATIONS;
        return 0;
    }
    int err = sample_line(r, s, n, line);
    if (err != -1)
        return err;
    /* pprof writes a sample's labels under it, indented 16 spaces */
    if (starts_with(s, n, "                ") && memchr(s, '[', n))
        return 0;
    return bad(r, line, "expected a sample \"VALUE... : LOCATION...\" (one value per sample type)",
               s, n);
}

/* ---- locations ---- */

/* The function of "NAME FILE:LINE s=START[(SYSTEM NAME)]", or "??". */
static size_t function_name(const char *s, size_t n)
{
    const char *start_at = NULL;
    for (const char *q = s; (q = memmem(q, n - (size_t)(q - s), " s=", 3)); q++)
        start_at = q;
    if (!start_at)
        return 0;
    const char *file = memrchr(s, ' ', (size_t)(start_at - s));
    return file ? (size_t)(file - s) : 0;
}

static int add_function(struct raw_reader *r, const char *s, size_t n)
{
    struct location *l = &r->locs[r->nlocs - 1];
    size_t len = function_name(s, n);
    if (len == 0 || (len == 2 && memcmp(s, "??", 2) == 0)) {
        s = l->addr;
        len = strlen(l->addr);
    }
    if (EMBER_VEC_RESERVE(r->frames, r->fcap, r->nframes + 1) < 0)
        return -ENOMEM;
    int err = ember_profile_intern(r->p, s, len, &r->frames[r->nframes]);
    if (!err) {
        r->nframes++;
        l->n++;
    }
    return err;
}

/* "     6: 0x4b0ef8 M=1 [F] main.small /src/main.go:23 s=0" */
static int location_line(struct raw_reader *r, const char *s, size_t n, uint64_t line)
{
    size_t i = 0;
    int64_t id;
    if (!read_int(s, n, &i, &id) || id < 0 || i + 4 > n || memcmp(s + i, ": 0x", 4) != 0)
        return bad(r, line, "expected a location \"ID: 0xADDRESS [M=MAPPING] FUNCTION...\"", s, n);
    size_t a = i + 2;
    for (i = a + 2; i < n && !is_space(s[i]);)
        i++;
    if (EMBER_VEC_RESERVE(r->locs, r->lcap, r->nlocs + 1) < 0 ||
        ember_u64map_put(&r->by_id, (uint64_t)id, (uint32_t)r->nlocs) < 0)
        return -ENOMEM;
    struct location *l = &r->locs[r->nlocs++];
    size_t alen = i - a < sizeof(l->addr) ? i - a : sizeof(l->addr) - 1;
    *l = (struct location){.start = (uint32_t)r->nframes};
    memcpy(l->addr, s + a, alen);
    while (i < n && is_space(s[i]))
        i++;
    if (starts_with(s + i, n - i, "M=")) {
        while (i < n && !is_space(s[i]))
            i++;
        while (i < n && is_space(s[i]))
            i++;
    }
    if (starts_with(s + i, n - i, "[F] "))
        i += 4;
    return add_function(r, s + i, n - i);
}

static int locations_line(struct raw_reader *r, const char *s, size_t n, uint64_t line)
{
    if (starts_with(s, n, "Mappings")) {
        r->section = DONE;
        return 0;
    }
    size_t i = 0;
    while (i < n && is_space(s[i]))
        i++;
    if (i < n && s[i] >= '0' && s[i] <= '9')
        return location_line(r, s, n, line);
    if (i == n)
        return 0;
    if (r->nlocs == 0 || i == 0)
        return bad(r, line, "expected a location \"ID: 0xADDRESS [M=MAPPING] FUNCTION...\"", s, n);
    return add_function(r, s + i, n - i); /* a function inlined in the location above */
}

static const char *section_name(enum section s)
{
    static const char *const names[] = {
        [HEADER] = "the header",           [TYPES] = "the Samples section",
        [SAMPLES] = "the Samples section", [LOCATIONS] = "the Locations section",
        [DONE] = "the Mappings section",
    };
    return names[s];
}

/* The input ended after pprof's header but before the Mappings section,
 * or in a line in between. */
static int cut(struct raw_reader *r, uint64_t line, bool in_line)
{
    static const char *const next[] = {
        [HEADER] = "a line \"Samples:\", the sample types and the samples",
        [TYPES] = "the sample types, the samples, then the \"Locations\" section",
        [SAMPLES] = "the rest of the samples, then the \"Locations\" section",
        [LOCATIONS] = "the rest of the locations, then the \"Mappings\" section",
        [DONE] = "",
    };
    char inside[80];
    snprintf(inside, sizeof(inside), "%s%s", in_line ? "a line of " : "", section_name(r->section));
    return ember_format_truncated(r->d, r->file, line, inside, "%s%s",
                                  in_line ? "the rest of the line, " : "", next[r->section]);
}

static int on_line(void *ctx, const char *s, size_t n, uint64_t line)
{
    struct raw_reader *r = ctx;
    if (r->at->unterminated && r->section != HEADER && r->section != DONE)
        return cut(r, line, true);
    if (n > 0 && s[0] == '#')
        return 0; /* the script skips comments anywhere */
    switch (r->section) {
    case HEADER:
        if (starts_with(s, n, "Samples:"))
            r->section = TYPES;
        r->seen_period |= starts_with(s, n, "Period: ") || starts_with(s, n, "PeriodType: ");
        return 0;
    case TYPES:
        return types_line(r, s, n, line);
    case SAMPLES:
        return samples_line(r, s, n, line);
    case LOCATIONS:
        return locations_line(r, s, n, line);
    case DONE:
        break;
    }
    return 0;
}

/* ---- the profile, from the scratch trie ---- */

static int add_stack(void *ctx, const uint32_t *path, size_t depth, const int64_t *self)
{
    struct raw_reader *r = ctx;
    uint32_t node = EMBER_ROOT, at;
    for (size_t i = 0; i < depth; i++) {
        size_t len;
        uint64_t id;
        const char *key =
            ember_profile_frame_name(r->stacks, ember_profile_node_frame(r->stacks, path[i]), &len);
        memcpy(&id, key, sizeof(id));
        if (!ember_u64map_get(&r->by_id, id, &at))
            return ember_diag_set(r->d, -EINVAL, r->file, r->last,
                                  "a sample refers to location %llu, which the Locations "
                                  "section does not have",
                                  (unsigned long long)id);
        /* frames are innermost first: the outermost inlined caller comes first */
        for (uint32_t k = r->locs[at].n; k-- > 0;) {
            int err = ember_profile_child(r->p, node, r->frames[r->locs[at].start + k], &node);
            if (err)
                return err;
        }
    }
    int err = ember_profile_add(r->p, node, 0, self[0]);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, r->last, "sample values overflow a 64-bit total");
    return err;
}

static int finish(struct raw_reader *r, uint64_t last)
{
    if (r->section == HEADER && !r->seen_period)
        return ember_diag_set(r->d, -EINVAL, r->file, last,
                              "no \"Samples:\" section with its sample types: expected the "
                              "output of `go tool pprof -raw`");
    if (r->section != DONE)
        return cut(r, last, false);
    r->last = last;
    return ember_profile_walk(r->stacks, add_stack, r);
}

static int raw_read(struct ember_profile *p, struct ember_input *in,
                    const struct ember_read_opts *o, struct ember_read_stats *st,
                    struct ember_diag *d)
{
    struct raw_reader r = {.p = p, .o = o, .st = st, .file = ember_input_name(in), .d = d};
    r.stacks = ember_profile_new();
    if (!r.stacks || ember_u64map_init(&r.by_id) < 0) {
        ember_profile_free(r.stacks);
        return -ENOMEM;
    }
    struct ember_lines_at at;
    r.at = &at;
    int err = ember_read_lines(in, o, d, on_line, &r, &at);
    if (!err)
        err = finish(&r, at.line);
    ember_profile_free(r.stacks);
    ember_u64map_release(&r.by_id);
    free(r.ids);
    free(r.locs);
    free(r.frames);
    return err;
}

/* Header lines of Profile.String(), then "Samples:". */
static enum ember_probe raw_probe(const char *data, size_t len)
{
    static const char *const heads[] = {
        "Comment: ", "PeriodType: ", "Period: ", "Time: ", "Duration: "};
    bool period = false;
    for (const char *s = data, *end = data + len; s < end;) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        size_t n = nl ? (size_t)(nl - s) : (size_t)(end - s);
        bool head = false;
        if (starts_with(s, n, "Samples:"))
            return nl ? EMBER_PROBE_YES : EMBER_PROBE_MAYBE;
        for (size_t i = 0; i < sizeof(heads) / sizeof(heads[0]); i++)
            head |= starts_with(s, n, heads[i]) ||
                    (!nl && n < strlen(heads[i]) && memcmp(s, heads[i], n) == 0);
        head |= !nl && n < 8 && memcmp(s, "Samples:", n) == 0; /* cut inside */
        if (!head && !(n > 0 && s[0] == '#'))
            return EMBER_PROBE_NO;
        period |= starts_with(s, n, "Period");
        if (!nl)
            break;
        s = nl + 1;
    }
    /* only header lines: a file cut before "Samples:" (the reader says so) */
    return period ? EMBER_PROBE_MAYBE : EMBER_PROBE_NO;
}

const struct ember_format ember_format_pprof_raw = {
    .name = "pprof-raw",
    .description = "the text of `go tool pprof -raw` (stackcollapse-go.pl's input)",
    .probe = raw_probe,
    .read = raw_read,
};
