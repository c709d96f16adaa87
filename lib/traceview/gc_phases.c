/*
 * gc_phases.c - an OCaml 5 program's GC phases, paired per domain from its
 * runtime events, and the question samples ask of them: taken inside a GC
 * phase or not (ember/traceview.h says what a GC phase is and how threads
 * map to domains).
 *
 * Invariants: a domain's slices are in the order their phases began (outer
 * before inner); its GC phases (depth 0) do not overlap and are sorted, and
 * so are the unions of every domain's GC phases and of their
 * stop-the-world ones, made once after reading, so that a sample costs one
 * or two binary searches.
 */
#include "ember/traceview.h"
#include "ember/tracefile.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct interval {
    uint64_t begin, end;
};

struct open_phase {
    int raw_id;
    size_t slice;
};

struct domain {
    struct ember_gc_slice *slices;
    size_t n, cap;
    struct open_phase *open;
    size_t nopen, ocap;
    struct interval *gc; /* depth 0 */
    size_t ngc, gccap;
    struct interval *stw; /* depth 0, stop-the-world */
    size_t nstw, stwcap;
    uint64_t last; /* its last event */
};

struct ember_gc_phases {
    struct ember_trace *t; /* owns the names */
    uint32_t pid;
    struct domain *domains;
    unsigned ndomains;
    struct interval *any; /* the union of the domains' GC phases */
    size_t nany;
    struct interval *stw; /* the union of their stop-the-world phases */
    size_t nstw;
    uint64_t last;
    int err;
};

static struct domain *domain_of(struct ember_gc_phases *g, unsigned ring)
{
    if (ring >= g->ndomains) {
        struct domain *d = realloc(g->domains, (size_t)(ring + 1) * sizeof(*d));
        if (!d)
            return NULL;
        memset(d + g->ndomains, 0, (size_t)(ring + 1 - g->ndomains) * sizeof(*d));
        g->domains = d;
        g->ndomains = ring + 1;
    }
    return &g->domains[ring];
}

/* A domain blocked on a condition is waiting, not collecting. */
static bool not_gc(const char *name)
{
    return strcmp(name, "domain_condition_wait") == 0;
}

static int begin_phase(struct domain *dm, const struct ember_trace_event *e)
{
    if (EMBER_VEC_RESERVE(dm->slices, dm->cap, dm->n + 1) < 0 ||
        EMBER_VEC_RESERVE(dm->open, dm->ocap, dm->nopen + 1) < 0)
        return -ENOMEM;
    dm->slices[dm->n] = (struct ember_gc_slice){
        .begin = e->ticks, .end = e->ticks, .name = e->site->name, .depth = (unsigned)dm->nopen};
    dm->open[dm->nopen++] = (struct open_phase){e->site->raw_id, dm->n++};
    return 0;
}

/* Phases every domain takes part in. */
static bool stop_the_world(const char *name)
{
    return strncmp(name, "stw_", 4) == 0 || strcmp(name, "interrupt_remote") == 0;
}

static int add_interval(struct interval **v, size_t *n, size_t *cap, uint64_t begin, uint64_t end)
{
    if (EMBER_VEC_RESERVE(*v, *cap, *n + 1) < 0)
        return -ENOMEM;
    (*v)[(*n)++] = (struct interval){begin, end};
    return 0;
}

/* Closes the phases open above depth keep at time at. */
static int close_to(struct domain *dm, size_t keep, uint64_t at, bool cut)
{
    while (dm->nopen > keep) {
        struct ember_gc_slice *s = &dm->slices[dm->open[--dm->nopen].slice];
        s->end = at > s->begin ? at : s->begin;
        s->open_at_end = cut;
        if (s->depth == 0 && add_interval(&dm->gc, &dm->ngc, &dm->gccap, s->begin, s->end) < 0)
            return -ENOMEM;
        if (s->depth == 0 && stop_the_world(s->name) &&
            add_interval(&dm->stw, &dm->nstw, &dm->stwcap, s->begin, s->end) < 0)
            return -ENOMEM;
    }
    return 0;
}

/* An end closes its phase and what was left open inside it; an end whose
 * begin is not open (read from the ring's middle) is ignored. */
static int end_phase(struct domain *dm, const struct ember_trace_event *e)
{
    for (size_t k = dm->nopen; k-- > 0;)
        if (dm->open[k].raw_id == e->site->raw_id)
            return close_to(dm, k, e->ticks, false);
    return 0;
}

static int on_event(void *ctx, const struct ember_trace_event *e)
{
    struct ember_gc_phases *g = ctx;
    struct domain *dm = domain_of(g, e->ring);
    if (!dm)
        return -ENOMEM;
    dm->last = e->ticks;
    g->last = e->ticks > g->last ? e->ticks : g->last;
    const struct ember_trace_site *s = e->site;
    if (s->origin != EMBER_ORIGIN_OCAML_RUNTIME || not_gc(s->name))
        return 0;
    if (s->raw_type == EMBER_OCAML_BEGIN)
        return begin_phase(dm, e);
    if (s->raw_type == EMBER_OCAML_EXIT)
        return end_phase(dm, e);
    return 0;
}

/* Lost words may hold the ends of the phases open: they end at the
 * domain's last event, flagged. */
static int on_lost(void *ctx, unsigned ring, uint64_t events, uint64_t words)
{
    struct ember_gc_phases *g = ctx;
    (void)events;
    (void)words;
    struct domain *dm = domain_of(g, ring);
    return dm ? close_to(dm, 0, dm->last, true) : -ENOMEM;
}

static int by_begin(const void *a, const void *b)
{
    const struct interval *x = a, *y = b;
    return x->begin < y->begin ? -1 : x->begin > y->begin;
}

/* A domain's GC phases, or its stop-the-world ones. */
static const struct interval *phases_of(const struct domain *d, bool stw, size_t *n)
{
    *n = stw ? d->nstw : d->ngc;
    return stw ? d->stw : d->gc;
}

/* The union of every domain's GC phases (or stop-the-world ones), sorted
 * and merged. */
static int make_union(struct ember_gc_phases *g, bool stw, struct interval **out, size_t *nout)
{
    size_t n = 0, k;
    for (unsigned i = 0; i < g->ndomains; i++) {
        phases_of(&g->domains[i], stw, &k);
        n += k;
    }
    struct interval *v = malloc((n ? n : 1) * sizeof(*v));
    if (!v)
        return -ENOMEM;
    n = 0;
    for (unsigned i = 0; i < g->ndomains; i++) {
        const struct interval *p = phases_of(&g->domains[i], stw, &k);
        if (k)
            memcpy(v + n, p, k * sizeof(*v));
        n += k;
    }
    qsort(v, n, sizeof(*v), by_begin);
    k = 0;
    for (size_t i = 0; i < n; i++) {
        if (k && v[i].begin <= v[k - 1].end) {
            if (v[i].end > v[k - 1].end)
                v[k - 1].end = v[i].end;
        } else {
            v[k++] = v[i];
        }
    }
    *out = v;
    *nout = k;
    return 0;
}

static int finish(struct ember_gc_phases *g)
{
    for (unsigned i = 0; i < g->ndomains; i++) {
        int err = close_to(&g->domains[i], 0, g->last, true);
        if (err)
            return err;
    }
    int err = make_union(g, false, &g->any, &g->nany);
    return err ? err : make_union(g, true, &g->stw, &g->nstw);
}

static bool has_phases(const struct ember_gc_phases *g)
{
    for (unsigned i = 0; i < g->ndomains; i++)
        if (g->domains[i].n)
            return true;
    return false;
}

int ember_gc_phases_read(struct ember_gc_phases **out, const char *path, struct ember_diag *d)
{
    *out = NULL;
    struct ember_gc_phases *g = calloc(1, sizeof(*g));
    if (!g)
        return -ENOMEM;
    int err = ember_trace_open(&g->t, path, d);
    if (!err && ember_trace_format(g->t) != EMBER_TRACE_OCAML)
        err = ember_diag_set(d, -EINVAL, path, 0,
                             "not an OCaml runtime_events file (expected the GC phases of an "
                             "OCaml 5 program, as ember record keeps them in OUT.events)");
    if (!err) {
        g->pid = ember_trace_pid(g->t);
        struct ember_trace_visitor v = {on_event, on_lost, g, false};
        err = ember_trace_visit(g->t, &v);
        if (err == -EINVAL || err == -EIO) {
            const struct ember_diag *why = ember_trace_error(g->t);
            if (d && why->msg[0])
                *d = *why;
        }
    }
    if (!err)
        err = finish(g);
    if (!err && !has_phases(g))
        err = ember_diag_set(d, -ENODATA, path, 0, "no GC phase in the runtime events");
    if (err) {
        ember_gc_phases_free(g);
        return err;
    }
    *out = g;
    return 0;
}

void ember_gc_phases_free(struct ember_gc_phases *g)
{
    if (!g)
        return;
    for (unsigned i = 0; i < g->ndomains; i++) {
        free(g->domains[i].slices);
        free(g->domains[i].open);
        free(g->domains[i].gc);
        free(g->domains[i].stw);
    }
    free(g->domains);
    free(g->any);
    free(g->stw);
    ember_trace_close(g->t);
    free(g);
}

uint32_t ember_gc_phases_pid(const struct ember_gc_phases *g)
{
    return g->pid;
}

unsigned ember_gc_phases_domains(const struct ember_gc_phases *g)
{
    return g->ndomains;
}

size_t ember_gc_phases_count(const struct ember_gc_phases *g, unsigned domain)
{
    return domain < g->ndomains ? g->domains[domain].n : 0;
}

const struct ember_gc_slice *ember_gc_phases_slice(const struct ember_gc_phases *g, unsigned domain,
                                                   size_t i)
{
    return &g->domains[domain].slices[i];
}

/* Whether time is inside one of the n sorted, disjoint intervals. */
static bool inside(const struct interval *v, size_t n, uint64_t time)
{
    size_t lo = 0, hi = n; /* the first interval beginning after time */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].begin <= time)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && time < v[lo - 1].end;
}

bool ember_gc_phases_during(const struct ember_gc_phases *g, uint32_t pid, uint32_t tid,
                            uint64_t time)
{
    if (pid != g->pid)
        return false;
    if (tid == pid)
        return (g->ndomains && inside(g->domains[0].gc, g->domains[0].ngc, time)) ||
               inside(g->stw, g->nstw, time);
    return inside(g->any, g->nany, time);
}

bool ember_gc_filter_keep(void *ctx, uint32_t pid, uint32_t tid, uint64_t time)
{
    struct ember_gc_filter *f = ctx;
    f->foreign += f->g && pid != ember_gc_phases_pid(f->g);
    bool keep = !f->g || ember_gc_phases_during(f->g, pid, tid, time) == f->during;
    if (!keep) {
        f->dropped++;
        return false;
    }
    f->kept++;
    return true;
}

void ember_gc_filter_time(void *ctx, uint32_t pid, uint32_t tid, uint64_t time)
{
    struct ember_gc_filter *f = ctx;
    if (!f->times)
        return;
    if (EMBER_VEC_RESERVE(f->v, f->cap, f->n + 1) < 0)
        f->nomem = true;
    else
        f->v[f->n++] = (struct ember_sample_time){pid, tid, time};
}

void ember_gc_filter_release(struct ember_gc_filter *f)
{
    free(f->v);
    f->v = NULL;
    f->n = f->cap = 0;
}
