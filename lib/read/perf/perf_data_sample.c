/*
 * perf_data_sample.c - the layout of a PERF_RECORD_SAMPLE: the fields its
 * event's sample_type says it has, in the kernel's order
 * (perf_output_sample), decoded into a struct pd_sample.
 * Invariants: every field is taken only after the bytes that hold it are
 * known to be inside the record; variable lengths (call chain, raw data,
 * branches, registers, stack) are checked before they are skipped or
 * pointed at; the decoded sample points into its record.
 */
#include "read/perf/perf_data.h"

#include <string.h>

struct cursor {
    const uint8_t *p, *end;
};

static bool take(struct cursor *c, size_t n, const uint8_t **out)
{
    if ((size_t)(c->end - c->p) < n)
        return false;
    *out = c->p;
    c->p += n;
    return true;
}

static bool take_u64(struct cursor *c, uint64_t *v)
{
    const uint8_t *p;
    if (!take(c, 8, &p))
        return false;
    *v = pd_u64(p);
    return true;
}

/* read_format's layout: one value, or a group of them. */
static bool skip_read(struct cursor *c, uint64_t rf)
{
    size_t per = 1 + !!(rf & PERF_FORMAT_ID) + !!(rf & PERF_FORMAT_LOST);
    size_t times =
        !!(rf & PERF_FORMAT_TOTAL_TIME_ENABLED) + !!(rf & PERF_FORMAT_TOTAL_TIME_RUNNING);
    const uint8_t *p;
    if (!(rf & PERF_FORMAT_GROUP))
        return take(c, 8 * (per + times), &p);
    uint64_t nr;
    if (!take_u64(c, &nr) || !take(c, 8 * times, &p) || nr > (uint64_t)(c->end - c->p) / 8 / per)
        return false;
    return take(c, (size_t)nr * 8 * per, &p);
}

static bool skip_branches(struct cursor *c, uint64_t bst)
{
    uint64_t nr, hw_idx;
    const uint8_t *p;
    if (!take_u64(c, &nr) || ((bst & PERF_SAMPLE_BRANCH_HW_INDEX) && !take_u64(c, &hw_idx)))
        return false;
    return nr <= (uint64_t)(c->end - c->p) / 24 && take(c, (size_t)nr * 24, &p);
}

static int sample_fields(const struct pd_attr *a, struct cursor *c, struct pd_sample *s,
                         const char **what)
{
    uint64_t t = a->sample_type, v;
    const uint8_t *p;
    *what = "fixed fields";
    if ((t & PERF_SAMPLE_IDENTIFIER) && !take_u64(c, &s->id))
        return -1;
    if ((t & PERF_SAMPLE_IP) && !take_u64(c, &s->ip))
        return -1;
    if (t & PERF_SAMPLE_TID) {
        if (!take(c, 8, &p))
            return -1;
        s->pid = pd_u32(p);
        s->tid = pd_u32(p + 4);
    }
    if ((t & PERF_SAMPLE_TIME) && !take_u64(c, &s->time))
        return -1;
    s->has_time = t & PERF_SAMPLE_TIME;
    if ((t & PERF_SAMPLE_ADDR) && !take_u64(c, &v))
        return -1;
    if ((t & PERF_SAMPLE_ID) && !take_u64(c, &s->id))
        return -1;
    if ((t & PERF_SAMPLE_STREAM_ID) && !take_u64(c, &v))
        return -1;
    if ((t & PERF_SAMPLE_CPU) && !take_u64(c, &v))
        return -1;
    s->has_period = (t & PERF_SAMPLE_PERIOD) || !a->freq; /* freq: sample_period is a rate */
    s->period = a->sample_period;
    if ((t & PERF_SAMPLE_PERIOD) && !take_u64(c, &s->period))
        return -1;
    *what = "read values";
    if ((t & PERF_SAMPLE_READ) && !skip_read(c, a->read_format))
        return -1;
    if (t & PERF_SAMPLE_CALLCHAIN) {
        *what = "call chain";
        if (!take_u64(c, &s->nchain) || s->nchain > (uint64_t)(c->end - c->p) / 8 ||
            !take(c, (size_t)s->nchain * 8, &s->chain))
            return -1;
    }
    if (t & PERF_SAMPLE_RAW) {
        *what = "raw data";
        if (!take(c, 4, &p) || !take(c, pd_u32(p), &p))
            return -1;
    }
    *what = "branch stack";
    if ((t & PERF_SAMPLE_BRANCH_STACK) && !skip_branches(c, a->branch_sample_type))
        return -1;
    if (t & PERF_SAMPLE_REGS_USER) {
        uint64_t abi;
        *what = "user registers";
        if (!take_u64(c, &abi))
            return -1;
        if (abi) {
            s->regs_mask = a->sample_regs_user;
            s->nregs = (unsigned)__builtin_popcountll(s->regs_mask);
            if (!take(c, 8 * (size_t)s->nregs, &s->regs))
                return -1;
        }
    }
    if (t & PERF_SAMPLE_STACK_USER) {
        uint64_t size, dyn;
        *what = "user stack";
        if (!take_u64(c, &size))
            return -1;
        if (size) {
            if (size > (uint64_t)(c->end - c->p) || !take(c, (size_t)size, &s->stack) ||
                !take_u64(c, &dyn) || dyn > size)
                return -1;
            s->stack_size = dyn;
        }
    }
    return 0;
}

int pd_file_parse_sample(const struct pd_file *f, const struct pd_attr *a,
                         const struct pd_record *r, struct pd_sample *out, struct ember_diag *d)
{
    memset(out, 0, sizeof(*out));
    out->cpumode = r->misc & PERF_RECORD_MISC_CPUMODE_MASK;
    struct cursor c = {r->data + 8, r->data + r->size};
    const char *what;
    if (sample_fields(a, &c, out, &what) < 0)
        return pd_corrupt(d, f->name, r, "it ends inside its %s (event '%s')", what, a->name);
    if (!out->stack)
        out->stack_size = 0;
    return 0;
}
