/*
 * prepare.c - modules made ready on several threads before their
 * addresses are resolved (module.h): their symbol tables, which libdwfl
 * reads on a module's first symbol, from its debug file when the file is
 * stripped (libc's alone is some 10 ms), and their DWARF: libdw inflates a
 * file's compressed debug sections and indexes its functions on a
 * module's first inline chain, which for libc's debug file alone is tens
 * of milliseconds. Each module is its own libdwfl session, whose work
 * needs no other's (libdwfl finds its debuginfod client once for all
 * under pthread_once).
 * Invariants: each module is prepared by one thread, while no other code
 * touches it; a module whose DWARF cannot be read is left as it was (its
 * first resolve meets the same answer, and says so); the threads are
 * joined before the call returns.
 */
#include "symbol/module.h"
#include "symbol/elfsyms.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

struct prepare {
    struct ember_symbol_module *const *m;
    size_t n;
    void (*fn)(struct ember_symbol_module *m);
    atomic_size_t next;
};

static void *prepare_main(void *arg)
{
    struct prepare *p = arg;
    for (size_t i; (i = atomic_fetch_add(&p->next, 1)) < p->n;)
        p->fn(p->m[i]);
    return NULL;
}

static void inlines(struct ember_symbol_module *m)
{
    struct ember_inlines *x;
    ember_symbol_module_inlines(m, &x);
}

static void symbols(struct ember_symbol_module *m)
{
    uint64_t bias;
    const struct ember_symtab *perf;
    Dwfl_Module *mod = ember_symbol_module_dwfl(m, &bias);
    if (mod)
        dwfl_module_getsymtab(mod); /* read once, kept by the module */
    ember_elfsyms_of(m, &perf);     /* the same (its error met again, and said, when used) */
}

/* fn on each of the n modules, on up to `threads` threads. */
static void prepare(struct ember_symbol_module *const *m, size_t n, unsigned threads,
                    void (*fn)(struct ember_symbol_module *m))
{
    struct prepare p = {m, n, fn, 0};
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

void ember_symbol_modules_prepare(struct ember_symbol_module *const *m, size_t n, unsigned threads)
{
    prepare(m, n, threads, inlines);
}

void ember_symbol_modules_read_symbols(struct ember_symbol_module *const *m, size_t n,
                                       unsigned threads)
{
    prepare(m, n, threads, symbols);
}
