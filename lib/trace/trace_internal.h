/*
 * trace_internal.h - what the tracing runtime's files share (internal to
 * libember-trace, which is libc only: nothing else of ember is included).
 * trace.c has the sites, the rings and the event paths; trace_file.c the
 * file, starting and stopping, forks and EMBER_TRACE.
 *
 * Invariants: these symbols are hidden (the library's visibility preset),
 * and named ember__ so that a program linking the static library cannot
 * clash with them; the state is written under ember__g.lock only.
 */
#ifndef EMBER_TRACE_TRACE_INTERNAL_H
#define EMBER_TRACE_TRACE_INTERNAL_H

#include "ember/trace.h"
#include "wire/ring_format.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { SITES_SIZE = 1 << 20 };

/* What a thread knows beyond the fast path's fields. */
struct thread_state {
    uint32_t epoch; /* the file its ring is in; 0: none */
    int ring;       /* valid when epoch is set and not untraced */
    bool full;      /* drain mode: waiting for the consumer */
    bool untraced;  /* no ring left for this thread in this file */
    char *base;     /* the open packet */
    uint64_t seq;   /* its sequence number */
    char name[56];
};
extern __thread struct thread_state ember__ts __attribute__((tls_model("initial-exec")));

/* The current file. Written under lock; read by the slow paths, which
 * compare epochs before touching a ring. */
struct trace_file {
    pthread_mutex_t lock;
    uint32_t epoch;
    char path[4096];
    char *map;
    size_t map_size;
    struct ember_ring_header *h;
    bool tsc;
    /* the site table, as in every file */
    char *sites;
    size_t sites_used, sites_cap;
    pthread_key_t key;
    bool key_made;
    struct ember_trace_opts opts;
    char base_path[4096]; /* as given: forks derive their file from it */
    bool from_env;        /* started by EMBER_TRACE: say why it stops */
};
extern struct trace_file ember__g;

/* n rounded up to a multiple of to. */
static inline size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

/* trace.c: a thread's end (pthread key destructor): its packet closed. */
void ember__thread_exit(void *unused);

#endif
