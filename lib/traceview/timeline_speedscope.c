/*
 * timeline_speedscope.c - the timeline of gc_timeline.c in speedscope's
 * file format: an evented profile per sampled thread (and per OCaml
 * domain's GC phases), on one axis: every profile starts at the timeline's
 * first time, "at" is nanoseconds from there, each span opens at its begin
 * and closes at its end, as speedscope's Time Order view draws them (gaps
 * where a thread was not sampled).
 *
 * Invariants: a track's spans come by begin, outer first, and nest (the
 * timeline's layout), so a stack of open spans closes them innermost first
 * and "at" never decreases, as speedscope's importer demands; the shared
 * frames are the spans' frames (spelled as views show them), then the GC
 * phases' names, each once.
 */
#include "ember/traceview.h"
#include "base/writer.h"
#include "traceview/spans.h"
#include "traceview/timeline.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SPEEDSCOPE_SCHEMA "https://www.speedscope.app/file-format-schema.json"

struct ss {
    struct ember_writer w;
    const struct timeline *t;
    const struct ember_gc_phases *g;
    uint32_t *frame; /* by profile frame: its shared index + 1; 0: none yet */
    struct phase {
        const char *name;
        bool open; /* still open at the end: named with EMBER_OPEN_SPAN_MARK */
    } * phases;    /* the GC phases' frames, shared after the spans' */
    size_t nphases, pcap;
    uint32_t nframes;
    uint64_t t0, t1; /* the timeline's first and last times */
    uint64_t *open;  /* the ends of the spans open on the track */
    uint32_t *open_frame;
    size_t nopen, ocap, fcap;
    size_t nprofiles;
    bool first; /* no event yet in the profile */
    int err;
};

static void put_frame_name(struct ss *s, const char *name, size_t len, const char *mark)
{
    ember_writer_puts(&s->w, s->nframes ? ",\n{\"name\":" : "\n{\"name\":");
    ember_export_json_bytes(&s->w, name, len, mark);
    ember_writer_puts(&s->w, "}");
    s->nframes++;
}

/* A slice's phase among those taken (nphases: not yet). */
static size_t phase_index(const struct ss *s, const struct ember_gc_slice *sl)
{
    size_t k = 0;
    while (k < s->nphases &&
           (strcmp(s->phases[k].name, sl->name) != 0 || s->phases[k].open != sl->open_at_end))
        k++;
    return k;
}

/* The shared frames: the spans' frames, then the phases' names. */
static int put_frames(struct ss *s)
{
    char buf[4096];
    for (size_t i = 0; i < s->t->nspans; i++) {
        uint32_t f = ember_profile_node_frame(s->t->p, s->t->spans[i].node);
        if (s->frame[f])
            continue;
        struct ember_frame fr;
        ember_profile_frame(s->t->p, f, &fr);
        size_t n = ember_frame_spell(&fr, buf, sizeof(buf));
        put_frame_name(s, buf, n < sizeof(buf) ? n : sizeof(buf) - 1, "");
        s->frame[f] = s->nframes;
    }
    for (unsigned dm = 0; s->g && dm < ember_gc_phases_domains(s->g); dm++)
        for (size_t i = 0; i < ember_gc_phases_count(s->g, dm); i++) {
            const struct ember_gc_slice *sl = ember_gc_phases_slice(s->g, dm, i);
            if (phase_index(s, sl) < s->nphases)
                continue;
            if (EMBER_VEC_RESERVE(s->phases, s->pcap, s->nphases + 1) < 0)
                return -ENOMEM;
            s->phases[s->nphases++] = (struct phase){sl->name, sl->open_at_end};
            put_frame_name(s, sl->name, strlen(sl->name),
                           sl->open_at_end ? EMBER_OPEN_SPAN_MARK : "");
        }
    return 0;
}

static uint32_t phase_frame(const struct ss *s, const struct ember_gc_slice *sl)
{
    return s->nframes - (uint32_t)s->nphases + (uint32_t)phase_index(s, sl);
}

static void put_event(struct ss *s, char type, uint32_t frame, uint64_t at)
{
    ember_writer_printf(&s->w, "%s{\"type\":\"%c\",\"frame\":%u,\"at\":%llu}", s->first ? "" : ",",
                        type, frame, (unsigned long long)(at - s->t0));
    s->first = false;
}

/* Closes the spans open on the track that end by at (all: UINT64_MAX). */
static void close_to(struct ss *s, uint64_t at)
{
    while (s->nopen && (at == UINT64_MAX || s->open[s->nopen - 1] <= at)) {
        s->nopen--;
        put_event(s, 'C', s->open_frame[s->nopen], s->open[s->nopen]);
    }
}

static void open_span(struct ss *s, uint32_t frame, uint64_t begin, uint64_t end)
{
    close_to(s, begin);
    if (EMBER_VEC_RESERVE(s->open, s->ocap, s->nopen + 1) < 0 ||
        EMBER_VEC_RESERVE(s->open_frame, s->fcap, s->nopen + 1) < 0) {
        s->err = -ENOMEM;
        return;
    }
    put_event(s, 'O', frame, begin);
    s->open[s->nopen] = end;
    s->open_frame[s->nopen++] = frame;
}

/* A profile's head: its name, its unit, the timeline's extent. */
static void profile_head(struct ss *s, const char *name)
{
    ember_writer_puts(&s->w, s->nprofiles++ ? "]},\n{\"type\":\"evented\",\"name\":"
                                            : "\n{\"type\":\"evented\",\"name\":");
    ember_export_json_bytes(&s->w, name, strlen(name), "");
    ember_writer_printf(&s->w,
                        ",\"unit\":\"nanoseconds\",\"startValue\":0,\"endValue\":%llu,"
                        "\"events\":[",
                        (unsigned long long)(s->t1 - s->t0));
    s->first = true;
    s->nopen = 0;
}

static void put_threads(struct ss *s)
{
    const struct timeline *t = s->t;
    char name[4200], thread[4096];
    for (size_t i = 0; i < t->nspans; i++) {
        const struct tl_span *sp = &t->spans[i];
        if (i == 0 || sp->tid != t->spans[i - 1].tid || sp->pid != t->spans[i - 1].pid) {
            close_to(s, UINT64_MAX);
            ember_timeline_thread_name(t, sp->pid, sp->tid, thread, sizeof(thread));
            snprintf(name, sizeof(name), "%s (pid %u, tid %u)", thread, sp->pid, sp->tid);
            profile_head(s, name);
        }
        open_span(s, s->frame[ember_profile_node_frame(t->p, sp->node)] - 1, sp->begin, sp->end);
    }
    close_to(s, UINT64_MAX);
}

static void put_phases(struct ss *s)
{
    char name[64];
    for (unsigned dm = 0; s->g && dm < ember_gc_phases_domains(s->g); dm++) {
        size_t n = ember_gc_phases_count(s->g, dm);
        if (!n)
            continue;
        snprintf(name, sizeof(name), "OCaml domain %u: GC phases", dm);
        profile_head(s, name);
        for (size_t i = 0; i < n; i++) {
            const struct ember_gc_slice *sl = ember_gc_phases_slice(s->g, dm, i);
            open_span(s, phase_frame(s, sl), sl->begin, sl->end);
        }
        close_to(s, UINT64_MAX);
    }
}

/* The timeline's first and last times, samples and phases. */
static void extent(struct ss *s)
{
    s->t0 = UINT64_MAX;
    for (size_t i = 0; i < s->t->nspans; i++) {
        s->t0 = s->t->spans[i].begin < s->t0 ? s->t->spans[i].begin : s->t0;
        s->t1 = s->t->spans[i].end > s->t1 ? s->t->spans[i].end : s->t1;
    }
    for (unsigned dm = 0; s->g && dm < ember_gc_phases_domains(s->g); dm++)
        for (size_t i = 0; i < ember_gc_phases_count(s->g, dm); i++) {
            const struct ember_gc_slice *sl = ember_gc_phases_slice(s->g, dm, i);
            s->t0 = sl->begin < s->t0 ? sl->begin : s->t0;
            s->t1 = sl->end > s->t1 ? sl->end : s->t1;
        }
    if (s->t0 == UINT64_MAX)
        s->t0 = 0;
}

static int write_all(struct ss *s, const char *title)
{
    extent(s);
    ember_writer_puts(&s->w, "{\"$schema\":\"" SPEEDSCOPE_SCHEMA "\",\"name\":");
    ember_export_json_bytes(&s->w, title, strlen(title), "");
    ember_writer_puts(&s->w, ",\"activeProfileIndex\":0,\n\"shared\":{\"frames\":[");
    int err = put_frames(s);
    if (err)
        return err;
    ember_writer_puts(&s->w, "]},\n\"profiles\":[");
    put_threads(s);
    put_phases(s);
    ember_writer_puts(&s->w, s->nprofiles ? "]}\n]}\n" : "\n]}\n");
    return s->err;
}

int ember_gc_timeline_speedscope(const struct ember_profile *p, const struct ember_gc_filter *f,
                                 const struct ember_gc_phases *g, const char *title,
                                 const struct ember_sink *out, struct ember_diag *d)
{
    struct timeline t = {.p = p, .g = g, .f = f};
    int err = ember_timeline_build(&t, d);
    struct ss *s = err ? NULL : calloc(1, sizeof(*s));
    if (!err && !s)
        err = -ENOMEM;
    if (s) {
        s->t = &t;
        s->g = g;
        s->frame = calloc(ember_profile_frame_count(p) + 1, sizeof(*s->frame));
        ember_writer_init(&s->w, out);
        err = s->frame ? write_all(s, title) : -ENOMEM;
        int ferr = ember_writer_flush(&s->w);
        err = err ? err : ferr;
        free(s->frame);
        free(s->phases);
        free(s->open);
        free(s->open_frame);
        free(s);
    }
    ember_timeline_release(&t);
    return err;
}
