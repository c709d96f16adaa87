/*
 * prepare.c - modules' DWARF made ready on several threads before their
 * addresses are resolved (module.h): libdw inflates a file's compressed
 * debug sections and indexes its functions on a module's first inline
 * chain, which for libc's debug file alone is tens of milliseconds, and
 * each module is its own libdwfl session, whose work needs no other's.
 * Invariants: each module is prepared by one thread, while no other code
 * touches it; a module whose DWARF cannot be read is left as it was (its
 * first resolve meets the same answer, and says so); the threads are
 * joined before the call returns.
 */
#include "symbol/module.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct prepare {
    struct ember_symbol_module *const *m;
    size_t n;
    atomic_size_t next;
};

static void *prepare_main(void *arg)
{
    struct prepare *p = arg;
    struct ember_inlines *x;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        ember_symbol_module_inlines(p->m[i], &x);
    return NULL;
}

void ember_symbol_modules_prepare(struct ember_symbol_module *const *m, size_t n, unsigned threads)
{
    struct prepare p = {m, n, 0};
    pthread_t t[16];
    unsigned nt = 0;
    if (threads > n)
        threads = (unsigned)n;
    while (nt + 1 < threads && nt < sizeof(t) / sizeof(t[0]) &&
           pthread_create(&t[nt], NULL, prepare_main, &p) == 0)
        nt++;
    prepare_main(&p);
    for (unsigned i = 0; i < nt; i++)
        pthread_join(t[i], NULL);
}
