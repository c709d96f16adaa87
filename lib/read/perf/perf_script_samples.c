/*
 * perf_script_samples.c - a `perf script` sample's start (its event line:
 * the filter, the period, the root frame) and end (its stack added), and
 * --srcline's frames that wait for the line after them.
 *
 * Invariants: a sample is added once, when it ends, if its event passed
 * the filter; its weight is its period (1 when it has none).
 */
#include "read/perf/perf_names.h"
#include "read/perf/perf_script_impl.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>

/* ---- samples ---------------------------------------------------------- */

int ember_perf_push_frames(struct perf_parser *ps, const uint32_t *fr, size_t n)
{
    if (EMBER_VEC_RESERVE(ps->stack, ps->scap, ps->nstack + n) < 0)
        return -ENOMEM;
    for (size_t i = n; i-- > 0;)
        ps->stack[ps->nstack++] = fr[i];
    return 0;
}

/* Ends the current sample: its frames from the leaf, then the root frame. */
int ember_perf_end_sample(struct perf_parser *ps)
{
    int err = 0;
    if (ps->in_sample && ps->keep) {
        uint32_t node;
        err = EMBER_VEC_RESERVE(ps->stack, ps->scap, ps->nstack + 1);
        if (!err) {
            ps->stack[ps->nstack] = ps->root;
            err = ember_profile_add_stack(ps->p, ps->stack, ps->nstack + 1, EMBER_LEAF_FIRST, NULL,
                                          &node);
        }
        if (!err)
            err = ember_profile_add(ps->p, node, ps->vperiod, ps->period);
        if (!err)
            err = ember_profile_add(ps->p, node, ps->vsamples, 1);
        if (!err)
            ps->st->samples++;
        else if (err == -ERANGE)
            err = ember_diag_set(ps->d, err, ps->file, ember_perf_line(ps),
                                 "sample weights overflow a 64-bit count");
    }
    ps->in_sample = false;
    ps->keep = false;
    ps->nstack = 0;
    return err;
}

void ember_perf_copy_name(char *dst, size_t cap, const char *s, size_t n)
{
    if (n >= cap)
        n = cap - 1;
    memcpy(dst, s, n);
    dst[n] = '\0';
}

/* A pid or tid as perf prints it: its number, -1 for "?" (unknown), -2 when
 * it is too long to be one. */
static int64_t task_id(const char *s, size_t n)
{
    if (n == 1 && s[0] == '?')
        return -1;
    if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
        return -2; /* kept as text, as printed */
    int64_t v = 0;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (s[i] - '0');
    return v;
}

int ember_perf_start_sample(struct perf_parser *ps, const struct event_head *ev, const char *line,
                            size_t len)
{
    const struct ember_perf_opts *po = &ps->po;
    const char *name;
    size_t nlen;
    int64_t period = 1;
    int err = ember_perf_end_sample(ps);
    if (err)
        return err;
    ps->in_sample = true;
    if (ember_perf_event_name(line, len, &name, &nlen, &period)) {
        if (!ps->have_filter) {
            ember_perf_copy_name(ps->filter, sizeof(ps->filter), name, nlen);
            ps->filter_len = strlen(ps->filter);
            ps->have_filter = true;
            ember_perf_copy_name(ps->st->kept_event, sizeof(ps->st->kept_event), name, nlen);
        } else if (!ember_perf_same_event(name, nlen, ps->filter, ps->filter_len)) {
            if (!ps->st->other_event[0]) {
                ember_perf_copy_name(ps->st->other_event, sizeof(ps->st->other_event), name, nlen);
                ps->other_origin = ps->origin;
                ps->other_line = ps->line;
            }
            ps->st->filtered++;
            return 0;
        }
    }
    ps->keep = true;
    /* no period, or 0, counts as one sample, as the script does */
    ps->period = period > 0 ? period : 1;
    ps->weighed |= period > 0;
    ps->java = ev->comm_len >= 4 && memcmp(ev->comm, "java", 4) == 0;
    /* root frame: the process or thread (views spell "comm-PID/TID") */
    int64_t pid = task_id(ev->pid, ev->pid_len), tid = task_id(ev->tid, ev->tid_len);
    if ((po->include_tid || po->include_pid) && pid >= -1 && tid >= -1) {
        struct ember_frame fr = {.name = ev->comm,
                                 .name_len = ev->comm_len,
                                 .module = EMBER_NO_MODULE,
                                 .kind = po->include_tid ? EMBER_FRAME_THREAD : EMBER_FRAME_PROCESS,
                                 .pid = pid,
                                 .tid = tid,
                                 .kind_in_name = true};
        return ember_profile_intern_frame(ps->p, &fr, &ps->root);
    }
    /* the command alone (or ids too long for a number: their text) */
    if (ember_perf_buf_reserve(ps, ev->comm_len + ev->pid_len + ev->tid_len + 4) < 0)
        return -ENOMEM;
    char *b = ps->buf;
    size_t o = 0;
    for (size_t i = 0; i < ev->comm_len; i++)
        b[o++] = ev->comm[i] == ' ' ? '_' : ev->comm[i];
    if (po->include_tid || po->include_pid) {
        b[o++] = '-';
        memcpy(b + o, ev->pid, ev->pid_len);
        o += ev->pid_len;
        if (po->include_tid) {
            b[o++] = '/';
            memcpy(b + o, ev->tid, ev->tid_len);
            o += ev->tid_len;
        }
    }
    return ember_perf_intern_root(ps->p, ps->buf, o, po->include_tid, &ps->root);
}

/* "file:line" (perf's srcline) into fr's file and line; false if it is
 * not of that form (the text is then kept in the name, as it is). */
static bool split_place(const char *s, size_t n, struct ember_frame *fr)
{
    const char *colon = memrchr(s, ':', n);
    if (!colon || colon == s || colon + 1 == s + n || (size_t)(s + n - colon - 1) > 9)
        return false;
    uint32_t line = 0;
    for (const char *p = colon + 1; p < s + n; p++) {
        if (!is_digit((unsigned char)*p))
            return false;
        line = line * 10 + (uint32_t)(*p - '0');
    }
    if (line == 0)
        return false;
    fr->file = s;
    fr->file_len = (size_t)(colon - s);
    fr->line = line;
    return true;
}

/* --srcline: the line after a frame is its source location. */
int ember_perf_finish_pending(struct perf_parser *ps, const char *s, size_t n)
{
    struct pending_frame *pf = &ps->pend;
    /* remove "[...]" parts, then surrounding whitespace */
    if (ember_perf_buf_reserve(ps, n + 1) < 0)
        return -ENOMEM;
    char *loc = ps->buf;
    size_t ll = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '[') {
            const char *close = memchr(s + i, ']', n - i);
            if (close) {
                i = (size_t)(close - s);
                continue;
            }
        }
        loc[ll++] = s[i];
    }
    size_t a = 0;
    while (a < ll && is_ws((unsigned char)loc[a]))
        a++;
    while (ll > a && is_ws((unsigned char)loc[ll - 1]))
        ll--;
    size_t nids = pf->n;
    if (EMBER_VEC_RESERVE(ps->fr, ps->frcap, nids) < 0)
        return -ENOMEM;
    for (size_t k = 0; k < nids; k++) {
        ps->fr[k] = pf->ids[k];
        if (ll == a)
            continue;
        /* "file:line": a frame that knows its place, spelled as the script
         * does ("func:file:line") where names are shown */
        struct ember_frame fr; /* with its address and module, when kept */
        ember_profile_frame(ps->p, pf->ids[k], &fr);
        fr.place_in_name = true;
        if (split_place(loc + a, ll - a, &fr)) {
            int err = ember_profile_intern_frame(ps->p, &fr, &ps->fr[k]);
            if (err)
                return err;
            continue;
        }
        /* another text: "name:text", the name as views spell it ("f_[k]") */
        fr.place_in_name = false;
        size_t len = ember_frame_spell(&fr, NULL, 0);
        if (EMBER_VEC_RESERVE(pf->join, pf->jcap, len + 2 + (ll - a)) < 0)
            return -ENOMEM;
        ember_frame_spell(&fr, pf->join, len + 1);
        pf->join[len] = ':';
        memcpy(pf->join + len + 1, loc + a, ll - a);
        int err = ember_profile_intern(ps->p, pf->join, len + 1 + (ll - a), &ps->fr[k]);
        if (err)
            return err;
    }
    pf->active = false;
    pf->n = 0;
    return ember_perf_push_frames(ps, ps->fr, nids);
}

int ember_perf_defer_srcline(struct perf_parser *ps, const uint32_t *fr, size_t n)
{
    struct pending_frame *pf = &ps->pend;
    if (EMBER_VEC_RESERVE(pf->ids, pf->cap, n) < 0)
        return -ENOMEM;
    if (n)
        memcpy(pf->ids, fr, n * sizeof(*fr));
    pf->n = n;
    pf->active = true;
    return 0;
}
