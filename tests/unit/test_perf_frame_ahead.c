/*
 * test_perf_frame_ahead.c - the records of chunks read ahead, framed on
 * the threads that read them (pd_round_frame_ahead): a data section of
 * random records (samples, maps, comms, FINISHED_ROUNDs) cut into pieces
 * of random sizes, from a byte to thousands, so that headers and records
 * are cut anywhere: each record wholly in its piece is framed there as
 * the reading thread frames it (its place, time, type, size and misc), no
 * other is, and perf's own among them are listed (own); the chain stops
 * at the data's end and at an event's attributes (HEADER_ATTR), which
 * change how later records are read.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_order.h"

#include <stdlib.h>
#include "unit_random.h"

enum { DATA_AT = 1000, NRECORDS = 20000 };

struct section {
    uint8_t *bytes; /* the file from offset 0: the data at DATA_AT, then garbage */
    size_t len;
    struct pd_frame *want; /* each record's frame, p as an offset */
    size_t n;
};

static void put64(uint8_t *p, uint64_t v)
{
    memcpy(p, &v, 8);
}

/* Record i's header and words at p (size bytes): a sample's time is its
 * third word (IP, TID, TIME), another's its last (sample_id_all's
 * TID, TIME). */
static void make_record(uint8_t *p, uint32_t type, uint16_t size, uint16_t misc, uint64_t time)
{
    memcpy(p, &type, 4);
    memcpy(p + 4, &misc, 2);
    memcpy(p + 6, &size, 2);
    for (size_t w = 8; w < size; w += 8)
        put64(p + w, 0x1111111111111111ull * (w / 8));
    if (type == PERF_RECORD_SAMPLE && size >= 32)
        put64(p + 24, time);
    else if (type < PD_RECORD_HEADER_ATTR && size >= 16)
        put64(p + size - 8, time);
}

static uint32_t random_type(uint64_t *rng)
{
    static const uint32_t types[] = {
        PERF_RECORD_SAMPLE, PERF_RECORD_SAMPLE,       PERF_RECORD_SAMPLE, PERF_RECORD_MMAP,
        PERF_RECORD_COMM,   PD_RECORD_FINISHED_ROUND, PD_RECORD_ID_INDEX};
    return types[next_random(rng) % (sizeof(types) / sizeof(types[0]))];
}

/* NRECORDS records from DATA_AT (record attr_at an event's attributes,
 * none where it is NRECORDS), then 64 bytes of garbage past the data's
 * end. */
static void make_section(struct section *s, uint64_t *rng, size_t attr_at)
{
    s->bytes = calloc(DATA_AT + NRECORDS * 520 + 64, 1);
    s->want = calloc(NRECORDS, sizeof(*s->want));
    assert_true(s->bytes && s->want);
    size_t at = DATA_AT;
    for (s->n = 0; s->n < NRECORDS; s->n++) {
        uint32_t type = s->n == attr_at ? PD_RECORD_HEADER_ATTR : random_type(rng);
        uint16_t size = (uint16_t)(8 * (1 + next_random(rng) % 64));
        uint16_t misc = (uint16_t)next_random(rng);
        uint64_t time = 1 + next_random(rng) % 1000000;
        make_record(s->bytes + at, type, size, misc, time);
        uint64_t t =
            type >= PD_RECORD_HEADER_ATTR || (type == PERF_RECORD_SAMPLE && size < 32) || size < 16
                ? 0
                : time;
        s->want[s->n] = (struct pd_frame){(const uint8_t *)(uintptr_t)at, t, type, size, misc};
        at += size;
    }
    s->len = at + 64;
    memset(s->bytes + at, 0x09, 64); /* sample-like headers: not data */
}

static void init_file(struct pd_file *f, const struct section *s)
{
    static struct pd_attr attr = {
        .sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME, .sample_id_all = true};
    pd_file_init(f, "test.data");
    f->attrs = &attr;
    f->nattrs = 1;
    f->data_offset = DATA_AT;
    f->data_size = s->len - 64 - DATA_AT;
}

/* Whether record i lies wholly in one of the pieces (ends[k]: where piece
 * k ends, from DATA_AT), *k the first piece that ends after the record
 * before it starts (records come in order). */
static bool in_one_piece(const struct section *s, size_t i, const size_t *ends, size_t npieces,
                         size_t *k)
{
    size_t from = (size_t)(uintptr_t)s->want[i].p, to = from + s->want[i].size;
    while (*k < npieces && ends[*k] <= from)
        ++*k;
    return *k < npieces && to <= ends[*k];
}

/* A chunk's frames say where perf's own records are among them: each
 * one, in order, and no other. */
static void check_own(const struct pd_frames *out)
{
    size_t k = 0;
    for (size_t i = 0; i < out->n; i++) {
        if (out->at[i].type < PD_RECORD_HEADER_ATTR)
            continue;
        if (k == out->nown || out->own[k] != i)
            fail_msg("frame %zu (type %u): not the next of perf's own (%zu of %zu)", i,
                     out->at[i].type, k, out->nown);
        k++;
    }
    assert_int_equal(k, out->nown);
}

/* The section framed in pieces of 1 to most bytes: each record framed as
 * want says where it lies wholly in a piece and comes before stop_at
 * (the record the chain stops at; NRECORDS where it does not), and no
 * other. */
static void frame_in_pieces(const struct section *s, uint64_t *rng, size_t most, size_t stop_at)
{
    struct pd_file f;
    init_file(&f, s);
    struct pd_chain c = {.next = DATA_AT};
    struct pd_frames out = {0};
    size_t *ends = calloc(s->len, sizeof(*ends)), npieces = 0;
    bool *framed = calloc(s->n, sizeof(*framed));
    assert_true(ends && framed);
    size_t next = 0; /* the next record that may be framed */
    for (size_t at = DATA_AT; at < s->len; at = ends[npieces++]) {
        size_t len = 1 + next_random(rng) % most;
        len = len < s->len - at ? len : s->len - at;
        ends[npieces] = at + len;
        pd_round_frame_ahead(&f, s->bytes + at, len, at, &c, &out);
        check_own(&out);
        for (size_t i = 0; i < out.n; i++) {
            size_t off = (size_t)(out.at[i].p - s->bytes);
            while (next < s->n && (size_t)(uintptr_t)s->want[next].p < off)
                next++;
            assert_true(next < stop_at);
            const struct pd_frame *w = &s->want[next];
            framed[next++] = true;
            assert_int_equal(off, (size_t)(uintptr_t)w->p);
            assert_int_equal(out.at[i].time, w->time);
            assert_int_equal(out.at[i].type, w->type);
            assert_int_equal(out.at[i].size, w->size);
            assert_int_equal(out.at[i].misc, w->misc);
        }
    }
    assert_true(c.stop);
    for (size_t i = 0, k = 0; i < s->n; i++)
        if (framed[i] != (i < stop_at && in_one_piece(s, i, ends, npieces, &k)))
            fail_msg("record %zu (at %zu): framed %d", i, (size_t)(uintptr_t)s->want[i].p,
                     framed[i]);
    free(ends);
    free(framed);
    pd_frames_free(&out);
    f.attrs = NULL; /* static */
    pd_file_release(&f);
}

static void test_pieces(void **state)
{
    (void)state;
    uint64_t rng = 0x5eed1234;
    struct section s;
    make_section(&s, &rng, NRECORDS);
    frame_in_pieces(&s, &rng, 12, NRECORDS);    /* headers cut nearly everywhere */
    frame_in_pieces(&s, &rng, 700, NRECORDS);   /* records, some cut */
    frame_in_pieces(&s, &rng, 70000, NRECORDS); /* as chunks are */
    free(s.bytes);
    free(s.want);
}

static void test_stops_at_attributes(void **state)
{
    (void)state;
    uint64_t rng = 0xa77e;
    struct section s;
    make_section(&s, &rng, NRECORDS / 2);
    frame_in_pieces(&s, &rng, 3000, NRECORDS / 2);
    free(s.bytes);
    free(s.want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pieces),
        cmocka_unit_test(test_stops_at_attributes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
