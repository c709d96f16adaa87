/*
 * memtrace_dump.c - the memtrace decoder's second client: prints a trace's
 * reference numbers in the format of the shared corpus's *.expected.txt
 * (written by memtrace's own reader, src/reference_dump.ml), so that a test
 * can diff the two byte for byte.
 *
 * usage: memtrace_dump TRACE.ctf [NFIRST]
 *        memtrace_dump --profile TRACE.ctf [FROM_NS TO_NS]
 *
 * The second form reads the trace as ember's commands do (the format row,
 * with --from/--to's window in ns) and prints each value's total, the heap
 * counter's points and peak, and the meta, for the tests of the profile.
 *
 * A test program: it keeps a record per allocation (the decoder's other
 * client, the profile, does not). Skipped packets are told on stderr, as
 * memtrace's reader does.
 */
#include "read/memtrace/memtrace_decode.h"
#include "ember/read.h"
#include "base/hash.h"
#include "base/u64map.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stats {
    uint64_t allocs, samples, words, live_allocs, live_samples, live_words;
};

struct backtrace {
    char *key; /* the codes, "0x..,0x.." */
    uint64_t *codes;
    size_t n;
    struct stats st;
};

struct object {
    uint32_t bt;
    uint8_t made, collected, promoted;
    uint64_t nsamples, length;
};

struct code {
    char *all;  /* its locations joined with " | ", "-" if none */
    char *last; /* its last location, NULL if none */
};

struct dump {
    uint64_t hash;
    uint64_t nev, nfirst;
    char *first;
    size_t first_len;
    uint64_t by_src[3][3]; /* events, samples, words */
    uint64_t promotes, collects;
    struct object *obj;
    size_t nobj;
    struct backtrace *bt;
    size_t nbt;
    struct ember_u64map bt_index; /* hash of key -> index (probing on collisions) */
    struct code *code;
    size_t ncode;
    struct ember_u64map code_index;
    size_t max_depth;
    char *line;
    size_t line_cap;
};

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p) {
        fprintf(stderr, "memtrace_dump: out of memory\n");
        exit(2);
    }
    return p;
}

static void emit(struct dump *m, const char *line)
{
    size_t n = strlen(line);
    for (size_t i = 0; i <= n; i++) {
        m->hash ^= i < n ? (uint8_t)line[i] : '\n';
        m->hash *= 0x100000001b3u;
    }
    if (m->nev++ < m->nfirst) {
        m->first = xrealloc(m->first, m->first_len + n + 2);
        memcpy(m->first + m->first_len, line, n);
        m->first_len += n;
        m->first[m->first_len++] = '\n';
    }
}

static char *format_loc(const struct mt_location *l)
{
    char *s;
    if (asprintf(&s, "%s@%s:%u:%u-%u", l->defname, l->file, l->line, l->start_char, l->end_char) <
        0)
        exit(2);
    return s;
}

static int on_location(void *ctx, uint64_t code, const struct mt_location *locs, size_t n)
{
    struct dump *m = ctx;
    struct code c = {.all = NULL, .last = NULL};
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char *s = format_loc(&locs[i]);
        size_t sl = strlen(s);
        c.all = xrealloc(c.all, len + sl + 4);
        if (i)
            memcpy(c.all + len, " | ", 3), len += 3;
        memcpy(c.all + len, s, sl + 1);
        len += sl;
        free(c.last);
        c.last = s;
    }
    if (!n)
        c.all = strdup("-");
    m->code = xrealloc(m->code, (m->ncode + 1) * sizeof(*m->code));
    m->code[m->ncode] = c;
    return ember_u64map_put(&m->code_index, code, (uint32_t)m->ncode++);
}

static uint32_t backtrace_of(struct dump *m, const char *key, const struct mt_alloc *a)
{
    uint64_t h = ember_hash_bytes(key, strlen(key), 1);
    uint32_t i;
    for (; ember_u64map_get(&m->bt_index, h, &i); h++)
        if (strcmp(m->bt[i].key, key) == 0)
            return i;
    m->bt = xrealloc(m->bt, (m->nbt + 1) * sizeof(*m->bt));
    struct backtrace *b = &m->bt[m->nbt];
    *b = (struct backtrace){.key = strdup(key), .n = a->backtrace_len};
    b->codes = xrealloc(NULL, a->backtrace_len * sizeof(uint64_t));
    memcpy(b->codes, a->backtrace, a->backtrace_len * sizeof(uint64_t));
    if (ember_u64map_put(&m->bt_index, h, (uint32_t)m->nbt) < 0)
        exit(2);
    return (uint32_t)m->nbt++;
}

static const char *const source_name[3] = {"minor", "major", "external"};

static int on_alloc(void *ctx, const struct mt_alloc *a)
{
    struct dump *m = ctx;
    size_t need = 64 + a->backtrace_len * 20;
    if (need > m->line_cap)
        m->line = xrealloc(m->line, m->line_cap = need * 2);
    int at =
        sprintf(m->line, "%" PRIu64 " A %" PRIu64 " %s %" PRIu64 " %" PRIu64 " %" PRIu64 " %zu ",
                a->dt_us, a->obj_id, source_name[a->source], a->length, a->nsamples,
                a->common_prefix, a->backtrace_len);
    char *key = m->line + at, *p = key;
    for (size_t i = 0; i < a->backtrace_len; i++)
        p += sprintf(p, "%s0x%" PRIx64, i ? "," : "", a->backtrace[i]);
    *p = 0;
    emit(m, m->line);
    uint64_t *s = m->by_src[a->source];
    s[0]++, s[1] += a->nsamples, s[2] += a->length;
    uint32_t b = backtrace_of(m, key, a);
    m->bt[b].st.allocs++, m->bt[b].st.samples += a->nsamples, m->bt[b].st.words += a->length;
    if (a->backtrace_len > m->max_depth)
        m->max_depth = a->backtrace_len;
    if (a->obj_id >= m->nobj) {
        size_t n = a->obj_id + 1 > m->nobj * 2 ? a->obj_id + 1 : m->nobj * 2;
        m->obj = xrealloc(m->obj, n * sizeof(*m->obj));
        memset(m->obj + m->nobj, 0, (n - m->nobj) * sizeof(*m->obj));
        m->nobj = n;
    }
    m->obj[a->obj_id] =
        (struct object){.bt = b, .made = 1, .nsamples = a->nsamples, .length = a->length};
    return 0;
}

static int on_object(struct dump *m, uint64_t dt, uint64_t id, char what)
{
    char line[64];
    snprintf(line, sizeof(line), "%" PRIu64 " %c %" PRIu64, dt, what, id);
    emit(m, line);
    if (id < m->nobj && what == 'P')
        m->obj[id].promoted = 1;
    if (id < m->nobj && what == 'C')
        m->obj[id].collected = 1;
    what == 'P' ? m->promotes++ : m->collects++;
    return 0;
}

static int on_promote(void *ctx, uint64_t dt, uint64_t id)
{
    return on_object(ctx, dt, id, 'P');
}

static int on_collect(void *ctx, uint64_t dt, uint64_t id)
{
    return on_object(ctx, dt, id, 'C');
}

static int on_skipped(void *ctx, const struct ember_diag *d, bool cut)
{
    (void)ctx, (void)cut;
    fprintf(stderr, "%s: %s\n", d->file, d->msg);
    return 0;
}

/* The reference's order: samples, then words (both descending), then the
 * key in byte order. */
struct keyed {
    const char *key;
    struct stats st;
    size_t bt; /* the backtrace's index; unused for sites */
};

static int by_weight(const void *a, const void *b)
{
    const struct keyed *x = a, *y = b;
    if (x->st.samples != y->st.samples)
        return x->st.samples > y->st.samples ? -1 : 1;
    if (x->st.words != y->st.words)
        return x->st.words > y->st.words ? -1 : 1;
    return strcmp(x->key, y->key);
}

static const struct code *code_of(const struct dump *m, uint64_t code)
{
    uint32_t i;
    return ember_u64map_get(&m->code_index, code, &i) ? &m->code[i] : NULL;
}

static void stats_print(const struct stats *s)
{
    printf("allocs=%" PRIu64 " samples=%" PRIu64 " words=%" PRIu64 " live_allocs=%" PRIu64
           " live_samples=%" PRIu64 " live_words=%" PRIu64,
           s->allocs, s->samples, s->words, s->live_allocs, s->live_samples, s->live_words);
}

static void add_stats(struct stats *to, const struct stats *s)
{
    to->allocs += s->allocs, to->samples += s->samples, to->words += s->words;
    to->live_allocs += s->live_allocs, to->live_samples += s->live_samples;
    to->live_words += s->live_words;
}

static void print_backtraces(const struct dump *m, struct keyed *k)
{
    printf("\n== backtraces (%zu; outermost frame first)\n", m->nbt);
    for (size_t i = 0; i < m->nbt; i++) {
        const struct backtrace *b = &m->bt[k[i].bt];
        printf("backtrace %zu depth=%zu ", i, b->n);
        stats_print(&b->st);
        printf("\n");
        for (size_t j = 0; j < b->n; j++) {
            const struct code *c = code_of(m, b->codes[j]);
            printf("  %zu 0x%" PRIx64 " %s\n", j, b->codes[j], c ? c->all : "-");
        }
    }
}

static void print_sites(const struct dump *m, const struct keyed *k)
{
    struct keyed *site = xrealloc(NULL, (m->nbt + 1) * sizeof(*site));
    char **names = xrealloc(NULL, (m->nbt + 1) * sizeof(*names));
    size_t ns = 0;
    for (size_t i = 0; i < m->nbt; i++) {
        const struct backtrace *b = &m->bt[k[i].bt];
        const struct code *c = b->n ? code_of(m, b->codes[b->n - 1]) : NULL;
        char *key;
        if (!b->n)
            key = strdup("<empty>");
        else if (c && c->last)
            key = strdup(c->last);
        else if (asprintf(&key, "?0x%" PRIx64, b->codes[b->n - 1]) < 0)
            exit(2);
        size_t j = 0;
        while (j < ns && strcmp(site[j].key, key) != 0)
            j++;
        if (j == ns) {
            names[ns] = key;
            site[ns++] = (struct keyed){.key = key};
        } else {
            free(key);
        }
        add_stats(&site[j].st, &b->st);
    }
    qsort(site, ns, sizeof(*site), by_weight);
    printf("\n== sites (%zu; grouped by innermost location)\n", ns);
    for (size_t i = 0; i < ns; i++) {
        printf("site ");
        stats_print(&site[i].st);
        printf(" %s\n", site[i].key);
    }
    for (size_t i = 0; i < ns; i++)
        free(names[i]);
    free(names);
    free(site);
}

static void print_header(const struct dump *m, const char *path, const struct mt_info *info,
                         const struct mt_stats *st, const struct stats *total, uint64_t promoted)
{
    FILE *f = fopen(path, "rb");
    long size = -1;
    if (f && fseek(f, 0, SEEK_END) == 0)
        size = ftell(f);
    if (f)
        fclose(f);
    const char *base = strrchr(path, '/');
    struct ember_u64map seen;
    if (ember_u64map_init(&seen) < 0)
        exit(2);
    for (size_t i = 0; i < m->nbt; i++)
        for (size_t j = 0; j < m->bt[i].n; j++)
            if (ember_u64map_put(&seen, m->bt[i].codes[j], 0) < 0)
                exit(2);
    printf("# memtrace reference dump v1 (memtrace's own Trace.Reader)\n");
    printf("file: %s\nfile_size: %ld\npackets: %" PRIu64 "\n", base ? base + 1 : path, size,
           st->packets);
    printf("sample_rate: %.17g\nword_size: %u\n", info->sample_rate, info->word_size);
    printf("executable_name: %s\nhost_name: %s\nocaml_runtime_params: %s\n", info->executable_name,
           info->host_name, info->runtime_params);
    printf("pid: %" PRIu64 "\nstart_time_us: %" PRIu64 "\ncontext: %s\n", info->pid,
           info->start_time_us, *info->context ? info->context : "<none>");
    printf("last_event_dt_us: %" PRIu64 "\nevents: %" PRIu64 "\nalloc_events: %" PRIu64 "\n",
           st->last_dt_us, st->events, total->allocs);
    for (int s = 0; s < 3; s++)
        printf("alloc_%s: %" PRIu64 " samples=%" PRIu64 " words=%" PRIu64 "\n", source_name[s],
               m->by_src[s][0], m->by_src[s][1], m->by_src[s][2]);
    printf("promote_events: %" PRIu64 "\ncollect_events: %" PRIu64 "\n", m->promotes, m->collects);
    printf("total_samples: %" PRIu64 "\ntotal_words: %" PRIu64 "\n", total->samples, total->words);
    printf("live_allocs: %" PRIu64 "\nlive_samples: %" PRIu64 "\nlive_words: %" PRIu64 "\n",
           total->live_allocs, total->live_samples, total->live_words);
    printf("live_promoted: %" PRIu64 "\ndistinct_backtraces: %zu\n", promoted, m->nbt);
    printf("distinct_location_codes: %u\nmax_backtrace_length: %zu\n", seen.count, m->max_depth);
    printf("event_lines_fnv1a64: %016" PRIx64 "\n", m->hash);
    ember_u64map_release(&seen);
}

static struct mt_info saved_info;

static void release(struct dump *m, struct keyed *k)
{
    for (size_t i = 0; i < m->nbt; i++)
        free(m->bt[i].key), free(m->bt[i].codes);
    for (size_t i = 0; i < m->ncode; i++)
        free(m->code[i].all), free(m->code[i].last);
    free((char *)saved_info.executable_name), free((char *)saved_info.host_name);
    free((char *)saved_info.runtime_params), free((char *)saved_info.context);
    ember_u64map_release(&m->bt_index);
    ember_u64map_release(&m->code_index);
    free(m->bt), free(m->code), free(m->obj), free(m->first), free(m->line), free(k);
}

/* The trace-info event's strings live only while its callback runs. */

static int on_info(void *ctx, const struct mt_info *info)
{
    (void)ctx;
    saved_info = *info;
    saved_info.executable_name = strdup(info->executable_name);
    saved_info.host_name = strdup(info->host_name);
    saved_info.runtime_params = strdup(info->runtime_params);
    saved_info.context = strdup(info->context);
    return 0;
}

static int profile(int argc, char **argv)
{
    struct ember_read_opts o = {.from_ns = argc > 3 ? strtoull(argv[3], 0, 10) : 0,
                                .to_ns = argc > 4 ? strtoull(argv[4], 0, 10) : 0};
    struct ember_read_stats st = {0};
    struct ember_diag d;
    struct ember_input *in;
    struct ember_profile *p = ember_profile_new();
    if (!p || ember_input_open(&in, argv[2], &d) < 0 ||
        ember_format_read(ember_format_find("memtrace"), p, in, &o, &st, &d) < 0) {
        fprintf(stderr, "%s: %s\n", d.file, d.msg);
        return 1;
    }
    ember_input_close(in);
    for (unsigned v = 0; v < ember_profile_values(p); v++)
        printf("%s %" PRId64 " %s\n", ember_profile_value_type(p, v), ember_profile_total(p, v),
               ember_profile_value_unit(p, v));
    const uint64_t *times;
    const int64_t *values;
    size_t n = ember_profile_counter_points(p, 0, &times, &values), peak = 0, per_ms = 0;
    for (size_t i = 0; i < n; i++) {
        peak = values[i] > values[peak] ? i : peak;
        size_t k = 0;
        while (i + k < n && times[i + k] / 1000000 == times[i] / 1000000)
            k++;
        per_ms = k > per_ms ? k : per_ms;
    }
    printf("counter %s %s points %zu most_per_ms %zu peak %" PRId64 " at_ns %" PRIu64
           " last %" PRId64 "\n",
           ember_profile_counter_name(p, 0), ember_profile_counter_unit(p, 0), n, per_ms,
           n ? values[peak] : 0, n ? times[peak] : 0, n ? values[n - 1] : 0);
    const struct ember_profile_meta *m = ember_profile_meta(p);
    size_t len;
    const char *c = ember_profile_comment(p, 0, &len);
    printf("time_nanos %" PRId64 " duration_nanos %" PRId64 "\ncomment %.*s\n", m->time_nanos,
           m->duration_nanos, (int)len, c);
    ember_profile_free(p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && strcmp(argv[1], "--profile") == 0)
        return profile(argc, argv);
    if (argc < 2) {
        fprintf(stderr, "usage: memtrace_dump TRACE.ctf [NFIRST]\n");
        return 2;
    }
    struct dump m = {.hash = 0xcbf29ce484222325u,
                     .nfirst = argc > 2 ? strtoull(argv[2], 0, 10) : 20};
    struct ember_diag d;
    struct ember_input *in;
    struct mt_stats st;
    const struct mt_tool tool = {.info = on_info,
                                 .location = on_location,
                                 .alloc = on_alloc,
                                 .promote = on_promote,
                                 .collect = on_collect,
                                 .skipped = on_skipped};
    if (ember_u64map_init(&m.bt_index) < 0 || ember_u64map_init(&m.code_index) < 0)
        return 2;
    if (ember_input_open(&in, argv[1], &d) < 0 || mt_decode(in, &tool, &m, &st, &d) < 0) {
        fprintf(stderr, "%s: %s\n", d.file, d.msg);
        return 1;
    }
    ember_input_close(in);
    struct stats total = {0};
    uint64_t promoted = 0;
    for (size_t i = 0; i < m.nobj; i++) {
        struct object *o = &m.obj[i];
        if (!o->made)
            continue; /* no allocation had this id (v3: another domain's) */
        struct stats *b = &m.bt[o->bt].st;
        if (!o->collected) {
            b->live_allocs++, b->live_samples += o->nsamples, b->live_words += o->length;
            promoted += o->promoted;
        }
    }
    struct keyed *k = xrealloc(NULL, (m.nbt + 1) * sizeof(*k));
    for (size_t i = 0; i < m.nbt; i++) {
        k[i] = (struct keyed){.key = m.bt[i].key, .st = m.bt[i].st, .bt = i};
        add_stats(&total, &m.bt[i].st);
    }
    qsort(k, m.nbt, sizeof(*k), by_weight);
    print_header(&m, argv[1], &saved_info, &st, &total, promoted);
    printf("\n== first %" PRIu64 " event lines\n", m.nev < m.nfirst ? m.nev : m.nfirst);
    fwrite(m.first, 1, m.first_len, stdout);
    print_backtraces(&m, k);
    print_sites(&m, k);
    release(&m, k);
    return 0;
}
