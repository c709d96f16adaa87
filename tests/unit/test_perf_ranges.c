/*
 * test_perf_ranges.c - `perf script` text read by threads in byte ranges
 * (lib/read/perf/perf_script_ranges.c and _threads.c) reads as one thread
 * reading it all: for ranges of 1 to 97 bytes (every byte of the text
 * starts a range for some of them) and the whole text, on 1 to 4 threads,
 * the folded stacks, the counts, the first other event, each warning's
 * line and text, the error's line and text, and the progress told (the
 * whole input at the end).
 *
 * The text has what a range may begin or end in: blank lines ("" and
 * "\r", several in a row, the very first line), comment lines (at the top
 * and inside a sample), CRLF lines, one-line samples, samples with no
 * blank line between them (and a line at column 0 that is no event line
 * inside one), samples of other
 * events (a different one later: the first must win), unrecognized lines
 * in and out of samples, and a sample longer than most ranges; a second
 * text ends in a line cut short. Then 300 random texts of such lines
 * (some cut short), on random ranges and thread counts; the reader's
 * filter is the input's first event, as perf_read gives it.
 */
#include "unit_profile.h"

#include "base/diag.h"
#include "read/perf/perf_script_impl.h"

#include <pthread.h>

enum { MAX_WARN = 64, BIG = 64 << 10 };

struct seen {
    pthread_mutex_t lock;
    struct ember_diag warn[MAX_WARN];
    size_t nwarn;
    uint64_t last_consumed;
    unsigned progress;
};

static void on_warn(void *ctx, const struct ember_diag *d)
{
    struct seen *s = ctx;
    pthread_mutex_lock(&s->lock);
    assert_true(s->nwarn < MAX_WARN);
    s->warn[s->nwarn++] = *d;
    pthread_mutex_unlock(&s->lock);
}

static void on_progress(void *ctx, const struct ember_input *in)
{
    struct seen *s = ctx;
    s->last_consumed = ember_input_consumed(in); /* called under the reader's lock */
    s->progress++;
}

static int by_line(const void *a, const void *b)
{
    const struct ember_diag *x = a, *y = b;
    return x->line != y->line ? (x->line < y->line ? -1 : 1) : strcmp(x->msg, y->msg);
}

/* What a reading gave. */
struct result {
    int err;
    struct ember_diag d;
    struct ember_read_stats st;
    struct seen seen;
    char *folded, *dump;
};

static int grow_write(void *ctx, const char *buf, size_t len)
{
    char **out = ctx;
    size_t had = *out ? strlen(*out) : 0;
    *out = realloc(*out, had + len + 1);
    memcpy(*out + had, buf, len);
    (*out)[had + len] = '\0';
    return 0;
}

/* The profile's modules, frames and nodes by number: the order they were
 * made in, which pprof's numbering shows. */
static char *dump(const struct ember_profile *p)
{
    char *out = NULL, line[600];
    for (uint32_t m = 0; m < ember_profile_module_count(p); m++) {
        snprintf(line, sizeof(line), "module %s\n", ember_profile_module_info(p, m)->path);
        grow_write(&out, line, strlen(line));
    }
    for (uint32_t f = 0; f < ember_profile_frame_count(p); f++) {
        struct ember_frame fr;
        ember_profile_frame(p, f, &fr);
        snprintf(line, sizeof(line), "frame %.*s %u %llx\n", (int)fr.name_len, fr.name, fr.module,
                 (unsigned long long)fr.address);
        grow_write(&out, line, strlen(line));
    }
    for (uint32_t n = 1; n < ember_profile_node_count(p); n++) {
        snprintf(line, sizeof(line), "node %u %u\n", ember_profile_node_parent(p, n),
                 ember_profile_node_frame(p, n));
        grow_write(&out, line, strlen(line));
    }
    return out;
}

/* Reads text with `threads` threads in ranges of `range` bytes (0: one
 * thread, the reader's own loop). */
static void read_text(const char *text, size_t len, unsigned threads, uint64_t range,
                      bool addresses, struct result *r)
{
    memset(r, 0, sizeof(*r));
    pthread_mutex_init(&r->seen.lock, NULL);
    struct ember_input *in;
    assert_int_equal(ember_input_open_memory(&in, text, len, "t.txt", &r->d), 0);
    struct ember_read_opts o = {.threads = threads ? threads : 1,
                                .addresses = addresses,
                                .warn = on_warn,
                                .warn_ctx = &r->seen,
                                .progress = on_progress,
                                .progress_ctx = &r->seen};
    struct ember_profile *p = ember_profile_new();
    ember_diag_clear(&r->d);
    char filter[128];
    if (range && !ember_perf_first_event(in, filter, sizeof(filter), &r->d))
        range = 0; /* as the reader: one thread (no event in the first bytes) */
    if (range)     /* the input's first event, as the reader gives it */
        r->err = ember_perf_read_threaded(p, in, &o, &r->st, &r->d, filter, range);
    else
        r->err = ember_format_find("perf")->read(p, in, &o, &r->st, &r->d);
    struct ember_sink sink = {grow_write, &r->folded};
    if (!r->err) {
        assert_int_equal(ember_write_folded(p, &sink), 0);
        r->dump = dump(p);
    }
    qsort(r->seen.warn, r->seen.nwarn, sizeof(r->seen.warn[0]), by_line);
    ember_profile_free(p);
    ember_input_close(in);
    pthread_mutex_destroy(&r->seen.lock);
}

static void check_same(const struct result *a, const struct result *b, size_t len)
{
    assert_int_equal(a->err, b->err);
    assert_int_equal(a->d.line, b->d.line);
    assert_string_equal(a->d.msg, b->d.msg);
    if (!a->err) {
        assert_string_equal(a->folded, b->folded);
        assert_string_equal(a->dump, b->dump);
    }
    assert_int_equal(a->st.samples, b->st.samples);
    assert_int_equal(a->st.skipped, b->st.skipped);
    assert_int_equal(a->st.filtered, b->st.filtered);
    assert_string_equal(a->st.other_event, b->st.other_event);
    assert_int_equal(a->seen.nwarn, b->seen.nwarn);
    for (size_t i = 0; i < a->seen.nwarn; i++) {
        assert_int_equal(a->seen.warn[i].line, b->seen.warn[i].line);
        assert_string_equal(a->seen.warn[i].msg, b->seen.warn[i].msg);
    }
    if (!a->err) {
        assert_true(b->seen.progress > 0);
        assert_int_equal(b->seen.last_consumed, len);
    }
}

static const char *const part[] = {
    "\n# ========\n# captured on: a test\n#\n\n",
    "prog 100/100 [000] 1.000001: 10 cycles: \n"
    "\tffff0001 main+0x1 (/bin/prog)\n"
    "\tffff0002 __libc_start_main+0x2 (/lib/libc.so.6)\n\n",
    "prog 100/101 [001] 1.000002: 20 cycles:\r\n"
    "\tffff0003 work+0x3 (/bin/prog)\r\n"
    "\tffff0001 main+0x1 (/bin/prog)\r\n\r\n",
    "prog 100/100 [000] 1.000003: 5 instructions: \n"
    "\tffff0001 main+0x1 (/bin/prog)\n\n\n\n",
    "prog 100/100 [000] 1.000004: 7 cycles:  ffff0005 leaf+0x1 (/bin/prog)\n\n",
    "this is not a perf line\n\n",
    /* samples without a blank line between them: one-line samples (perf
     * record without -g), stacks ended by the next event line, a line at
     * column 0 that is no event line (a frame of the sample it is in) */
    "a 1 [000] 1.1: 1 cycles:  ffff0011 one (/bin/a)\n"
    "a 1 [000] 1.2: 2 cycles:  ffff0012 two (/bin/a)\n"
    "b 2 [001] 1.3: 3 cycles: \n\tffff0013 three (/bin/b)\n"
    "b 2 [001] 1.4: 4 cycles:\r\n\tffff0014 four (/bin/b)\r\n"
    "c 3 [000] 1.5: 5 cycles: \n\tffff0015 five (/bin/c)\nnot an event line\n"
    "\tffff0016 six (/bin/c)\n\n",
    "prog 300/300 [002] 1.000005: 3 cycles: \n"
    "# a comment in a sample\n"
    "\tffff0006 inner (/bin/prog)\n"
    "\t!!! not a frame\n"
    "\tffff0007 outer (/bin/prog)\n\n",
};

/* The parts, then the long sample, the parts again with another event, and
 * a last sample with no blank line after it (cut short when `cut`). */
static char *make_text(bool cut, size_t *len)
{
    char *t = malloc(BIG);
    size_t n = 0;
    for (size_t i = 0; i < sizeof(part) / sizeof(part[0]); i++)
        n += (size_t)snprintf(t + n, BIG - n, "%s", part[i]);
    n += (size_t)snprintf(t + n, BIG - n, "long 7 [001] 1.5: 2 cycles: \n");
    for (int f = 0; f < 60; f++)
        n += (size_t)snprintf(t + n, BIG - n, "\tffff%04x deep%d (/bin/deep)\n", 0x100 + f, f % 7);
    n += (size_t)snprintf(t + n, BIG - n, "\n");
    for (size_t i = 1; i < sizeof(part) / sizeof(part[0]); i++)
        n += (size_t)snprintf(t + n, BIG - n, "%s", part[i]);
    n += (size_t)snprintf(t + n, BIG - n,
                          "prog 100/100 [000] 2.0: 4 branches: \n\tffff0001 main (/bin/prog)\n\n"
                          "tail 9 [000] 3.0: 1 cycles: \n\tffff0009 last (/bin/prog)\n");
    if (cut)
        n += (size_t)snprintf(t + n, BIG - n, "\tffff000a cut (/bi");
    *len = n;
    return t;
}

static void free_result(struct result *r)
{
    free(r->folded);
    free(r->dump);
}

static void test_ranges_read_as_one(bool cut, bool addresses)
{
    size_t len;
    char *text = make_text(cut, &len);
    struct result one, many;
    read_text(text, len, 0, 0, addresses, &one);
    assert_int_equal(one.err != 0, cut); /* the text is what the test says */
    assert_true(one.seen.nwarn >= 4);
    /* split: the second range starts with the other event that comes
     * second (its line 1 is not before the first one's) */
    uint64_t split = (uint64_t)(strstr(text, "prog 100/100 [000] 2.0") - text);
    const uint64_t ranges[] = {1,  2,  3,   4,    5,   7,     11,    16,    31,
                               64, 97, 256, 1000, len, split, split, split, split};
    for (unsigned t = 1; t <= 4; t++)
        for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
            read_text(text, len, t, ranges[i], addresses, &many);
            check_same(&one, &many, len);
            free_result(&many);
        }
    free_result(&one);
    free(text);
}

static void test_whole(void **state)
{
    (void)state;
    test_ranges_read_as_one(false, false);
}

/* frames with their addresses and modules (pprof's locations, mappings) */
static void test_addresses(void **state)
{
    (void)state;
    test_ranges_read_as_one(false, true);
}

static void test_cut(void **state)
{
    (void)state;
    test_ranges_read_as_one(true, false);
}

/* Lines of every kind a text may hold, drawn at random. */
static const char *const line[] = {
    "p 1 [000] 1.0: 1 cycles: \n",
    "p 2/3 [001] 2.0: 7 cycles:\r\n",
    "q 4 [000] 3.0: 2 instructions: \n",
    "r 5 [000] 4.0: 3 cycles:  ffff0001 flat (/bin/r)\n",
    "\tffff0002 f (/bin/p)\n",
    "\tffff0003 g+0x1 (/bin/p)\r\n",
    "\tffff0004 [unknown] ([unknown])\n",
    "\n",
    "\r\n",
    "# a comment\n",
    "junk at column 0\n",
    "\tnot a frame\n",
    "\n\n",
};

/* Random texts of those lines, some cut short, on random ranges and
 * thread counts: read as one thread reads them. */
static void test_random_texts(void **state)
{
    (void)state;
    uint64_t rng = 0x5eed;
    char text[4096];
    for (int round = 0; round < 300; round++) {
        size_t len = 0, n = 1 + next_random(&rng) % 60;
        for (size_t i = 0; i < n; i++)
            len += (size_t)snprintf(text + len, sizeof(text) - len, "%s",
                                    line[next_random(&rng) % (sizeof(line) / sizeof(line[0]))]);
        if (next_random(&rng) % 4 == 0 && len > 3)
            len -= next_random(&rng) % 3 + 1; /* cut inside its last line */
        struct result one, many;
        bool addresses = next_random(&rng) & 1;
        read_text(text, len, 0, 0, addresses, &one);
        read_text(text, len, 1 + next_random(&rng) % 4, 1 + next_random(&rng) % 40, addresses,
                  &many);
        if (!one.err && !one.st.samples) {
            free_result(&one); /* no samples: the check is the reader's caller's */
            free_result(&many);
            continue;
        }
        check_same(&one, &many, len);
        free_result(&one);
        free_result(&many);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_whole),
        cmocka_unit_test(test_addresses),
        cmocka_unit_test(test_cut),
        cmocka_unit_test(test_random_texts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
