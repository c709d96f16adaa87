/*
 * ocaml_consumer.c - OCaml's own reader of runtime_events files, for
 * comparison with ember's: the C API of OCaml's consumer library
 * (otherlibs/runtime_events/runtime_events_consumer.c, what
 * Runtime_events.read_poll and olly run on), driven from C so that only
 * the reading is measured, not an OCaml program's callbacks. Built by
 * bench/run_ocaml.sh against an OCaml 5 source tree whose runtime is built
 * (OCAML_SRC); not part of ember's build.
 *
 * usage: ocaml_consumer count|print DIR PID
 *   count: every callback counts its event (the bare read);
 *   print: one line per event, as `ember trace dump --format ocaml` prints
 *          it (ring, timestamp, kind, id, value; runtime events by number),
 *          with stdio.
 * Prints the events read to stderr.
 */
#include <caml/runtime_events_consumer.h>
#include <stdio.h>
#include <stdlib.h>

/* Setters as the consumer's .c defines them: OCaml 5.2's header declares
 * set_runtime_alloc and set_user_events, which the library does not have. */
void caml_runtime_events_set_alloc(struct caml_runtime_events_cursor *,
                                   int (*)(int, void *, uint64_t, uint64_t *));
void caml_runtime_events_set_user_unit(struct caml_runtime_events_cursor *,
                                       int (*)(int, void *, int64_t, uintnat, char *));
void caml_runtime_events_set_user_span(struct caml_runtime_events_cursor *,
                                       int (*)(int, void *, int64_t, uintnat, char *,
                                               ev_user_span));
void caml_runtime_events_set_user_int(struct caml_runtime_events_cursor *,
                                      int (*)(int, void *, int64_t, uintnat, char *, uint64_t));
void caml_runtime_events_set_user_custom(struct caml_runtime_events_cursor *,
                                         int (*)(int, void *, int64_t, uintnat, char *, uintnat,
                                                 uint64_t *));

struct counts {
    unsigned long long events, lost_words;
    int print;
};

static int runtime(int dom, void *data, uint64_t ts, const char *kind, unsigned id)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%llu\t%s\t%u\n", dom, (unsigned long long)ts, kind, id);
    return 1;
}

static int on_begin(int dom, void *data, uint64_t ts, ev_runtime_phase p)
{
    return runtime(dom, data, ts, "BEGIN", p);
}

static int on_end(int dom, void *data, uint64_t ts, ev_runtime_phase p)
{
    return runtime(dom, data, ts, "END", p);
}

static int on_counter(int dom, void *data, uint64_t ts, ev_runtime_counter k, uint64_t v)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%llu\tCOUNTER\t%d\t%llu\n", dom, (unsigned long long)ts, (int)k,
               (unsigned long long)v);
    return 1;
}

static int on_alloc(int dom, void *data, uint64_t ts, uint64_t *sz)
{
    struct counts *c = data;
    c->events++;
    if (c->print) {
        printf("%d\t%llu\tALLOC\t-\talloc\t", dom, (unsigned long long)ts);
        for (int i = 0; i < 20; i++) /* RUNTIME_EVENTS_NUM_ALLOC_BUCKETS (internal) */
            printf(i ? ",%llu" : "%llu", (unsigned long long)sz[i]);
        putchar('\n');
    }
    return 1;
}

static int on_lifecycle(int dom, void *data, int64_t ts, ev_lifecycle l, int64_t v)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%lld\tLIFECYCLE\t%d\t%lld\n", dom, (long long)ts, (int)l, (long long)v);
    return 1;
}

static int on_lost(int dom, void *data, int words)
{
    struct counts *c = data;
    c->lost_words += (unsigned)words;
    if (c->print)
        printf("%d\t-\tLOST_WORDS\t-\t-\t%d\n", dom, words);
    return 1;
}

static int on_unit(int dom, void *data, int64_t ts, uintnat id, char *name)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%lld\tUSER_UNIT\t%lu\t%s\n", dom, (long long)ts, (unsigned long)id, name);
    return 1;
}

static int on_int(int dom, void *data, int64_t ts, uintnat id, char *name, uint64_t v)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%lld\tUSER_INT\t%lu\t%s\t%llu\n", dom, (long long)ts, (unsigned long)id, name,
               (unsigned long long)v);
    return 1;
}

static int on_span(int dom, void *data, int64_t ts, uintnat id, char *name, ev_user_span s)
{
    struct counts *c = data;
    c->events++;
    if (c->print)
        printf("%d\t%lld\tUSER_SPAN\t%lu\t%s\t%s\n", dom, (long long)ts, (unsigned long)id, name,
               s == EV_USER_SPAN_BEGIN ? "begin" : "end");
    return 1;
}

static int on_custom(int dom, void *data, int64_t ts, uintnat id, char *name, uintnat len,
                     uint64_t *payload)
{
    struct counts *c = data;
    c->events++;
    if (c->print) {
        const unsigned char *b = (const unsigned char *)payload;
        size_t n = len * 8 - 1 - b[len * 8 - 1];
        printf("%d\t%lld\tUSER_CUSTOM\t%lu\t%s\t%.*s\n", dom, (long long)ts, (unsigned long)id,
               name, (int)n, (const char *)b);
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: ocaml_consumer count|print DIR PID\n");
        return 2;
    }
    struct caml_runtime_events_cursor *cur;
    struct counts c = {0, 0, argv[1][0] == 'p'};
    runtime_events_error err = caml_runtime_events_create_cursor(argv[2], atoi(argv[3]), &cur);
    if (err != E_SUCCESS) {
        fprintf(stderr, "ocaml_consumer: cannot create a cursor for %s/%s.events: error %d\n",
                argv[2], argv[3], (int)err);
        return 1;
    }
    caml_runtime_events_set_runtime_begin(cur, on_begin);
    caml_runtime_events_set_runtime_end(cur, on_end);
    caml_runtime_events_set_runtime_counter(cur, on_counter);
    caml_runtime_events_set_alloc(cur, on_alloc);
    caml_runtime_events_set_lifecycle(cur, on_lifecycle);
    caml_runtime_events_set_lost_events(cur, on_lost);
    caml_runtime_events_set_user_unit(cur, on_unit);
    caml_runtime_events_set_user_span(cur, on_span);
    caml_runtime_events_set_user_int(cur, on_int);
    caml_runtime_events_set_user_custom(cur, on_custom);
    uintnat consumed = 0;
    err = caml_runtime_events_read_poll(cur, &c, 0, &consumed);
    caml_runtime_events_free_cursor(cur);
    if (err != E_SUCCESS) {
        fprintf(stderr, "ocaml_consumer: read_poll failed: error %d\n", (int)err);
        return 1;
    }
    fflush(stdout);
    fprintf(stderr, "%llu events, %llu words lost\n", c.events, c.lost_words);
    return 0;
}
