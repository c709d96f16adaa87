/*
 * test_memviews.c - how the writers show a memory profile, on one built by
 * hand with Go's four heap values and a "heap" counter over time: the
 * report's objects beside bytes and its peak line, the flame graph's
 * palette and title, the Chrome export's "C" events and the Perfetto
 * export's counter track (decoded by protoc when it is installed).
 *
 * Invariant: every expected number is worked out in the comments from the
 * stacks below, not copied from ember's output.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "ember/model.h"
#include "ember/traceview.h"
#include "ember/write.h"
#include "unit_sh.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct out {
    char *buf;
    size_t len, cap;
};

static int out_write(void *ctx, const char *buf, size_t len)
{
    struct out *o = ctx;
    if (o->len + len + 1 > o->cap) {
        o->cap = (o->len + len + 1) * 2;
        o->buf = realloc(o->buf, o->cap);
        assert_non_null(o->buf);
    }
    memcpy(o->buf + o->len, buf, len);
    o->len += len;
    o->buf[o->len] = '\0';
    return 0;
}

/* Values alloc_objects, alloc_space, inuse_objects, inuse_space (as Go
 * and ember's heap recordings name them); three allocating stacks:
 *   main;load;read_file  10 objects of 1 MiB, 2 of them in use
 *   main;load;parse      1000 objects, 1536000 B, none in use
 *   main;serve           5 objects, 5120 B, all in use
 * alloc_space in all: 10485760 + 1536000 + 5120 = 12026880 B (11.47 MiB);
 * and a counter "heap" whose peak, 12.5 MiB (13107200), is at 1.234 s. */
static struct ember_profile *heap_profile(const char *selected)
{
    static const struct {
        const char *stack;
        int64_t w[4];
    } rows[] = {
        {"main;load;read_file", {10, 10485760, 2, 2097152}},
        {"main;load;parse", {1000, 1536000, 0, 0}},
        {"main;serve", {5, 5120, 5, 5120}},
    };
    struct ember_profile *p = ember_profile_new();
    unsigned v;
    assert_int_equal(ember_profile_value(p, "alloc_objects", "count", &v), 0);
    assert_int_equal(ember_profile_value(p, "alloc_space", "bytes", &v), 0);
    assert_int_equal(ember_profile_value(p, "inuse_objects", "count", &v), 0);
    assert_int_equal(ember_profile_value(p, "inuse_space", "bytes", &v), 0);
    for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
        uint32_t frames[3], n = 0;
        char *copy = strdup(rows[r].stack), *save = NULL;
        for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save))
            assert_int_equal(ember_profile_intern(p, f, strlen(f), &frames[n++]), 0);
        free(copy);
        assert_int_equal(ember_profile_add_stack(p, frames, n, EMBER_ROOT_FIRST, rows[r].w, NULL),
                         0);
    }
    unsigned heap;
    assert_int_equal(ember_profile_counter_new(p, "heap", "bytes", &heap), 0);
    static const uint64_t t[] = {0, 1000000, 1234000000, 2000000000};
    static const int64_t h[] = {0, 4096, 13107200, 2102272};
    for (int i = 0; i < 4; i++)
        assert_int_equal(ember_profile_counter_add(p, heap, t[i], h[i]), 0);
    assert_int_equal(ember_profile_select(p, selected), 0);
    return p;
}

static const char *report(const struct ember_profile *p, enum ember_table fmt, struct out *o)
{
    struct ember_report_opts ro = {.top = 0, .format = fmt};
    struct ember_sink sink = {out_write, o};
    o->len = 0;
    assert_int_equal(ember_report_top(p, &ro, &sink), 0);
    return o->buf;
}

/* alloc_space shown, alloc_objects beside it; the heap's peak on top. */
static void test_report_bytes_and_objects(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("alloc_space");
    struct out o = {0};
    const char *want =
        "peak heap 12.5 MiB at 1.234 s\n"
        "Showing 5 of 5 functions; total 11.47 MiB of alloc_space (1015 alloc_objects)\n"
        "        self   self%    sum%        total  total%  self objects total objects  "
        "function\n"
        "      10 MiB  87.19%  87.19%       10 MiB  87.19%            10            10  "
        "read_file\n"
        "    1.46 MiB  12.77%  99.96%     1.46 MiB  12.77%          1000          1000  parse\n"
        "       5 KiB   0.04% 100.00%        5 KiB   0.04%             5             5  serve\n"
        "         0 B   0.00% 100.00%    11.47 MiB 100.00%             0          1015  main\n"
        "         0 B   0.00% 100.00%    11.46 MiB  99.96%             0          1010  load\n";
    assert_string_equal(report(p, EMBER_TABLE_TEXT, &o), want);
    const char *csv = "function,self,self_pct,total,total_pct,self_objects,total_objects\n"
                      "read_file,10485760,87.1860,10485760,87.1860,10,10\n"
                      "parse,1536000,12.7714,1536000,12.7714,1000,1000\n"
                      "serve,5120,0.0426,5120,0.0426,5,5\n"
                      "main,0,0.0000,12026880,100.0000,0,1015\n"
                      "load,0,0.0000,12021760,99.9574,0,1010\n";
    assert_string_equal(report(p, EMBER_TABLE_CSV, &o), csv);
    free(o.buf);
    ember_profile_free(p);
}

/* inuse_objects shown: its partner is inuse_space, in bytes. */
static void test_report_objects_and_bytes(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("inuse_objects");
    struct out o = {0};
    const char *text = report(p, EMBER_TABLE_TEXT, &o);
    /* in use: read_file 2 objects (2 MiB), serve 5 (5 KiB): 7 objects */
    assert_non_null(strstr(text, "total 7 inuse_objects (2 MiB of inuse_space)\n"));
    assert_non_null(strstr(text, "   self bytes   total bytes  function\n"));
    assert_non_null(strstr(text, "           5  71.43%  71.43%            5  71.43%         5 KiB"
                                 "         5 KiB  serve\n"));
    const char *csv = report(p, EMBER_TABLE_TSV, &o);
    assert_non_null(strstr(csv, "\tself_bytes\ttotal_bytes\n"));
    assert_non_null(strstr(csv, "read_file\t2\t28.5714\t2\t28.5714\t2097152\t2097152\n"));
    free(o.buf);
    ember_profile_free(p);
}

/* A profile with no partner value keeps its columns as they were. */
static void test_report_count_profile_unchanged(void **state)
{
    (void)state;
    struct ember_profile *p = ember_profile_new();
    uint32_t f;
    assert_int_equal(ember_profile_intern(p, "work", 4, &f), 0);
    assert_int_equal(ember_profile_add_stack(p, &f, 1, EMBER_ROOT_FIRST, (int64_t[]){3}, NULL), 0);
    struct out o = {0};
    assert_string_equal(report(p, EMBER_TABLE_CSV, &o),
                        "function,self,self_pct,total,total_pct\nwork,3,100.0000,3,100.0000\n");
    assert_string_equal(report(p, EMBER_TABLE_TEXT, &o),
                        "Showing 1 of 1 functions; total 3 samples\n"
                        "        self   self%    sum%        total  total%  function\n"
                        "           3 100.00% 100.00%            3 100.00%  work\n");
    free(o.buf);
    ember_profile_free(p);
}

/* A recording of many processes has a counter each: the report names the
 * five highest peaks, highest first, and how many more there are. */
static void test_report_many_counters(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("alloc_space");
    for (int k = 1; k <= 7; k++) {
        char name[16];
        unsigned c;
        snprintf(name, sizeof(name), "heap sh-%d", k);
        assert_int_equal(ember_profile_counter_new(p, name, "bytes", &c), 0);
        assert_int_equal(ember_profile_counter_add(p, c, 1000000u * k, 1024 * k), 0);
    }
    struct out o = {0};
    const char *text = report(p, EMBER_TABLE_TEXT, &o);
    const char *want = "peak heap 12.5 MiB at 1.234 s\n"
                       "peak heap sh-7 7 KiB at 0.007 s\n"
                       "peak heap sh-6 6 KiB at 0.006 s\n"
                       "peak heap sh-5 5 KiB at 0.005 s\n"
                       "peak heap sh-4 4 KiB at 0.004 s\n"
                       "(3 more counters with lower peaks)\nShowing ";
    if (strncmp(text, want, strlen(want)) != 0)
        fail_msg("the report begins:\n%.300s", text);
    free(o.buf);
    ember_profile_free(p);
}

/* Frames with a file make the writers work on a names view of the
 * profile: the counters go with it (the report's peak, the tree's too, and
 * Chrome's "C" events). */
static void test_counters_through_names_view(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("inuse_space");
    struct ember_frame fr = {
        .name = "alloc", .name_len = 5, .file = "a.c", .file_len = 3, .module = EMBER_NO_MODULE};
    uint32_t f;
    assert_int_equal(ember_profile_intern_frame(p, &fr, &f), 0);
    assert_int_equal(
        ember_profile_add_stack(p, &f, 1, EMBER_ROOT_FIRST, (int64_t[]){1, 64, 1, 64}, NULL), 0);
    assert_true(ember_profile_detailed(p));
    struct out o = {0};
    assert_non_null(strstr(report(p, EMBER_TABLE_TEXT, &o), "peak heap 12.5 MiB at 1.234 s\n"));
    struct ember_report_opts ro = {.format = EMBER_TABLE_TEXT};
    struct ember_sink sink = {out_write, &o};
    o.len = 0;
    assert_int_equal(ember_report_tree(p, &ro, &sink), 0);
    assert_true(strncmp(o.buf, "peak heap 12.5 MiB at 1.234 s\n", 30) == 0);
    struct ember_diag d;
    o.len = 0;
    assert_int_equal(ember_write_chrome(p, NULL, &sink, &d), 0);
    assert_non_null(strstr(o.buf, "\"name\":\"heap\",\"args\":{\"bytes\":13107200}}"));
    free(o.buf);
    ember_profile_free(p);
}

static const char *flame(const struct ember_profile *p, const char *colors, struct out *o)
{
    struct ember_flame_opts fo;
    struct ember_diag d;
    ember_flame_opts_default(&fo);
    fo.colors = colors;
    struct ember_sink sink = {out_write, o};
    o->len = 0;
    assert_int_equal(ember_flame_render(p, &fo, &sink, &d), 0);
    return o->buf;
}

/* FlameGraph's memory palette (green background) and a title naming the
 * value, unless --colors says otherwise; bytes as bytes in the tooltips. */
static void test_flame_memory(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("alloc_space");
    struct out o = {0};
    const char *svg = flame(p, NULL, &o);
    assert_non_null(strstr(svg, ">Memory Flame Graph: alloc_space</text>"));
    assert_non_null(strstr(svg, "stop-color=\"#eef2ee\""));
    assert_non_null(strstr(svg, "<title>read_file (10 MiB, 87.19%)</title>"));
    svg = flame(p, "hot", &o);
    assert_non_null(strstr(svg, "stop-color=\"#eeeeb0\""));
    assert_null(strstr(svg, "#eef2ee"));
    ember_profile_select(p, "alloc_objects"); /* still a memory profile */
    svg = flame(p, NULL, &o);
    assert_non_null(strstr(svg, ">Memory Flame Graph: alloc_objects</text>"));
    assert_non_null(strstr(svg, "stop-color=\"#eef2ee\""));
    ember_profile_free(p);
    /* a count profile: flamegraph.pl's defaults */
    p = ember_profile_new();
    uint32_t f;
    assert_int_equal(ember_profile_intern(p, "work", 4, &f), 0);
    assert_int_equal(ember_profile_add_stack(p, &f, 1, EMBER_ROOT_FIRST, (int64_t[]){300}, NULL),
                     0);
    svg = flame(p, NULL, &o);
    assert_non_null(strstr(svg, ">Flame Graph</text>"));
    assert_non_null(strstr(svg, "stop-color=\"#eeeeb0\""));
    free(o.buf);
    ember_profile_free(p);
}

/* The heap as "C" events on a process of their own, times in us. */
static void test_chrome_counter(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("alloc_space");
    struct out o = {0};
    struct ember_sink sink = {out_write, &o};
    struct ember_diag d;
    assert_int_equal(ember_write_chrome(p, NULL, &sink, &d), 0);
    const char *want =
        "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":2,\"tid\":1,\"args\":{\"name\":"
        "\"profile: counters\"}},\n"
        "{\"ph\":\"C\",\"pid\":2,\"tid\":1,\"ts\":0.000,\"name\":\"heap\",\"args\":{\"bytes\":0}},"
        "\n"
        "{\"ph\":\"C\",\"pid\":2,\"tid\":1,\"ts\":1000.000,\"name\":\"heap\",\"args\":{\"bytes\":"
        "4096}},\n"
        "{\"ph\":\"C\",\"pid\":2,\"tid\":1,\"ts\":1234000.000,\"name\":\"heap\",\"args\":{"
        "\"bytes\":13107200}},\n"
        "{\"ph\":\"C\",\"pid\":2,\"tid\":1,\"ts\":2000000.000,\"name\":\"heap\",\"args\":{"
        "\"bytes\":2102272}}\n]";
    assert_non_null(strstr(o.buf, want));
    free(o.buf);
    ember_profile_free(p);
}

/* The Perfetto export: a process, a counter track in bytes under it, a
 * TYPE_COUNTER event per point; protoc decodes it with the subset of
 * Perfetto's protos the trace tests use. */
static void test_perfetto_counter(void **state)
{
    (void)state;
    struct ember_profile *p = heap_profile("alloc_space");
    struct out o = {0};
    struct ember_sink sink = {out_write, &o};
    struct ember_diag d;
    assert_int_equal(ember_counters_perfetto(p, "heap.pb.gz", &sink, &d), 0);
    if (sh("command -v protoc >/dev/null") != 0) {
        fprintf(stderr, "note: no protoc: the Perfetto export not decoded\n");
        free(o.buf);
        ember_profile_free(p);
        return;
    }
    char dir[] = "/tmp/test_memviews.XXXXXX", path[64];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/trace.pb", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(o.buf, 1, o.len, f), o.len);
    fclose(f);
    assert_int_equal(sh("protoc --decode=perfetto.protos.Trace -I%s %s/perfetto_subset.proto "
                        "<%s >%s.txt",
                        EMBER_TRACE_PROTO, EMBER_TRACE_PROTO, path, path),
                     0);
    snprintf(path + strlen(path), sizeof(path) - strlen(path), ".txt");
    f = fopen(path, "r");
    assert_non_null(f);
    char text[8192];
    text[fread(text, 1, sizeof(text) - 1, f)] = '\0';
    fclose(f);
    sh("rm -rf %s", dir);
    const char *track =
        "track_descriptor {\n    uuid: 16\n    name: \"heap\"\n"
        "    parent_uuid: 1\n    counter {\n      unit: UNIT_SIZE_BYTES\n    }\n  }";
    assert_non_null(strstr(text, "process {\n      pid: 1\n      process_name: \"heap.pb.gz\""));
    assert_non_null(strstr(text, track));
    const char *peak = "timestamp: 1234000000\n  trusted_packet_sequence_id: 1\n  track_event {\n"
                       "    type: TYPE_COUNTER\n    track_uuid: 16\n    counter_value: 13107200\n";
    assert_non_null(strstr(text, peak));
    size_t events = 0;
    for (const char *s = text; (s = strstr(s, "TYPE_COUNTER")); s++)
        events++;
    assert_int_equal(events, 4);
    free(o.buf);
    ember_profile_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report_bytes_and_objects),
        cmocka_unit_test(test_report_objects_and_bytes),
        cmocka_unit_test(test_report_count_profile_unchanged),
        cmocka_unit_test(test_report_many_counters),
        cmocka_unit_test(test_counters_through_names_view),
        cmocka_unit_test(test_flame_memory),
        cmocka_unit_test(test_chrome_counter),
        cmocka_unit_test(test_perfetto_counter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
