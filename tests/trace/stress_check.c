/*
 * stress_check.c - the live reader of the stress test: follows the trace
 * file while stress_writer runs and checks every event as it comes: its
 * check value (no torn event), its number (no reordering: each thread's
 * numbers only grow), and that the gaps add up exactly to the losses the
 * follower reports per thread. Prints a summary; exits 1 on any failure.
 *
 * usage: stress_check TRACE_FILE THREADS EVENTS
 */
#include "ember/tracefile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct state {
    int threads;
    int64_t *next; /* per writer thread: the next i expected */
    uint64_t *gaps;
    uint64_t read, bad;
    unsigned *ring_of; /* writer thread -> ring, -1 unknown */
};

static int check(void *ctx, const struct ember_trace_event *e)
{
    struct state *s = ctx;
    if (strcmp(e->site->name, "e") != 0 || e->site->nfields != 3) {
        s->bad++;
        return 0;
    }
    int64_t t = e->v[0].i, i = e->v[1].i;
    if (t < 0 || t >= s->threads ||
        e->v[2].i != (int64_t)((uint64_t)t * 0x9E3779B97F4A7C15ULL ^ (uint64_t)i)) {
        fprintf(stderr, "torn event: t=%lld i=%lld check=%lld\n", (long long)t, (long long)i,
                (long long)e->v[2].i);
        s->bad++;
        return 0;
    }
    if (i < s->next[t]) {
        fprintf(stderr, "thread %lld: event %lld after %lld\n", (long long)t, (long long)i,
                (long long)s->next[t] - 1);
        s->bad++;
    }
    s->gaps[t] += (uint64_t)(i - s->next[t]);
    s->next[t] = i + 1;
    s->ring_of[t] = e->ring;
    s->read++;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    struct state s = {.threads = atoi(argv[2])};
    long events = atol(argv[3]);
    s.next = calloc((size_t)s.threads, sizeof(*s.next));
    s.gaps = calloc((size_t)s.threads, sizeof(*s.gaps));
    s.ring_of = calloc((size_t)s.threads, sizeof(*s.ring_of));
    struct ember_diag d;
    struct ember_trace *f;
    if (ember_trace_follow(&f, argv[1], 30000, &d) < 0) {
        fprintf(stderr, "%s: %s\n", d.file, d.msg);
        return 1;
    }
    for (;;) {
        bool alive = ember_trace_writer_alive(f);
        int n = ember_trace_poll(f, check, &s, !alive);
        if (n < 0) {
            fprintf(stderr, "poll failed: %d\n", n);
            return 1;
        }
        if (!alive)
            break;
        if (n == 0)
            usleep(1000);
    }
    int failed = s.bad > 0;
    uint64_t lost = 0;
    for (int t = 0; t < s.threads; t++) {
        /* events after the last one read were lost too */
        uint64_t tail = (uint64_t)(events - s.next[t]);
        const struct ember_trace_ring *r = ember_trace_ring(f, s.ring_of[t]);
        uint64_t missing = s.gaps[t] + tail;
        if (!r || r->lost != missing) {
            fprintf(stderr, "thread %d: %llu events missing, %llu reported lost\n", t,
                    (unsigned long long)missing, r ? (unsigned long long)r->lost : 0ULL);
            failed = 1;
        }
        lost += missing;
    }
    printf("%s: %d threads x %ld events, %llu read live, %llu lost (all accounted for), %llu "
           "bad\n",
           failed ? "FAIL" : "ok", s.threads, events, (unsigned long long)s.read,
           (unsigned long long)lost, (unsigned long long)s.bad);
    ember_trace_close(f);
    free(s.next);
    free(s.gaps);
    free(s.ring_of);
    return failed;
}
