/*
 * read_profile.c - reading the inputs of a command into one profile, with
 * the format detected per file, warnings capped, and progress shown.
 */
#include "cli.h"
#include "ember/base.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A format's option on the command line: its value is set by name in the
 * read options, for the formats that know it. */
static int format_option(const struct option *opt, const char *arg)
{
    struct cli_reader *r = opt->value;
    if (ember_read_opts_set(&r->ro, opt->long_name, arg ? arg : "1") < 0) {
        cli_error("too many format options");
        return -1;
    }
    return 0;
}

static bool option_listed(const struct option *opts, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (opts[i].long_name && strcmp(opts[i].long_name, name) == 0)
            return true;
    return false;
}

/* The formats' own options, a heading per format, each name once (formats
 * may share one: the first row's help is shown). */
static struct option *format_options(struct cli_reader *r)
{
    size_t n = 1;
    for (const struct ember_format *const *f = ember_formats(); *f; f++)
        for (const struct ember_format_option *o = (*f)->options; o && o->name; o++)
            n += 2;
    struct option *opts = calloc(n, sizeof(*opts));
    size_t k = 0;
    for (const struct ember_format *const *f = ember_formats(); opts && *f; f++) {
        bool heading = false;
        for (const struct ember_format_option *o = (*f)->options; o && o->name; o++) {
            if (option_listed(opts, k, o->name))
                continue;
            if (!heading && (*f)->options_heading)
                opts[k++] = (struct option)OPT_GROUP_((*f)->options_heading);
            heading = true;
            opts[k++] = (struct option){OPT_CALLBACK,
                                        o->name,
                                        0,
                                        r,
                                        o->arg,
                                        o->help,
                                        o->def,
                                        format_option,
                                        o->type == EMBER_OPTION_STRING};
        }
    }
    if (opts)
        opts[k] = (struct option)OPT_END_();
    return opts;
}

void cli_reader_init(struct cli_reader *r)
{
    memset(r, 0, sizeof(*r));
    r->format = "auto";
    size_t n = (size_t)snprintf(r->format_help, sizeof(r->format_help), "input format: auto");
    for (const struct ember_format *const *f = ember_formats(); *f && n < sizeof(r->format_help);
         f++)
        n += (size_t)snprintf(r->format_help + n, sizeof(r->format_help) - n, ", %s", (*f)->name);
    r->format_options = format_options(r); /* NULL if memory is short: none offered */
    r->input_fd = -1;
    r->to_option = "to";
}

void cli_reader_release(struct cli_reader *r)
{
    free(r->format_options);
    r->format_options = NULL;
    ember_transform_free(r->transform);
    r->transform = NULL;
    ember_gc_phases_free(r->gc_phases);
    r->gc_phases = NULL;
    ember_gc_filter_release(&r->gc);
}

int cli_transform_option(const struct option *opt, const char *arg)
{
    static const struct {
        const char *name;
        enum ember_step step;
    } steps[] = {
        {"demangle", EMBER_STEP_DEMANGLE},     {"merge-threads", EMBER_STEP_MERGE_THREADS},
        {"skip-after", EMBER_STEP_SKIP_AFTER}, {"focus", EMBER_STEP_FOCUS},
        {"ignore", EMBER_STEP_IGNORE},         {"hide", EMBER_STEP_HIDE},
        {"collapse", EMBER_STEP_COLLAPSE},     {"collapse-gc", EMBER_STEP_COLLAPSE_GC},
        {"prune-from", EMBER_STEP_PRUNE_FROM}, {"flatten-recursion", EMBER_STEP_FLATTEN_RECURSION},
        {"reverse", EMBER_STEP_REVERSE},
    };
    struct cli_reader *r = opt->value;
    if (!r->transform && !(r->transform = ember_transform_new())) {
        cli_error("out of memory");
        return -1;
    }
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        if (strcmp(steps[i].name, opt->long_name) != 0)
            continue;
        struct ember_diag d;
        ember_diag_clear(&d);
        int err = ember_transform_add(r->transform, steps[i].step, arg, &d);
        if (err)
            cli_error("--%s: %s", opt->long_name, d.msg[0] ? d.msg : strerror(-err));
        return err ? -1 : 0;
    }
    return -1;
}

/* A time as --from and --to take it: a decimal number of seconds, or of
 * the unit after it (s, ms, us, ns), into ns, exactly (1.5 is 1500000000,
 * not what a double makes of it); -1 when it is not one, or past 2^63 ns
 * (292 years) or finer than a nanosecond. */
static int parse_time(const char *s, uint64_t *ns)
{
    static const struct {
        const char *suffix;
        uint64_t ns;
    } units[] = {{"", 1000000000}, {"s", 1000000000}, {"ms", 1000000}, {"us", 1000}, {"ns", 1}};
    size_t digits = strspn(s, "0123456789"), frac = 0;
    if (s[digits] == '.')
        frac = strspn(s + digits + 1, "0123456789");
    if (digits + frac == 0)
        return -1;
    const char *suffix = s + digits + (s[digits] == '.' ? 1 + frac : 0);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++) {
        if (strcmp(suffix, units[u].suffix) != 0)
            continue;
        uint64_t v = 0, scale = units[u].ns;
        for (size_t i = 0; i < digits; i++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, s[i] - '0', &v))
                return -1;
        if (__builtin_mul_overflow(v, scale, &v))
            return -1;
        for (size_t i = 0; i < frac; i++) { /* each digit a tenth of the last */
            uint64_t d = (uint64_t)(s[digits + 1 + i] - '0');
            if (scale == 1 && d) /* finer than a nanosecond (zeros are fine) */
                return -1;
            scale /= scale > 1 ? 10 : 1;
            if (__builtin_add_overflow(v, d * scale, &v))
                return -1;
        }
        if (v > INT64_MAX)
            return -1;
        *ns = v;
        return 0;
    }
    return -1;
}

int cli_window_option(const struct option *opt, const char *arg)
{
    struct cli_reader *r = opt->value;
    bool from = strcmp(opt->long_name, "from") == 0;
    uint64_t ns;
    if (parse_time(arg, &ns) < 0) {
        cli_error("--%s expects a time from the recording's start, in seconds (1.5) or with its "
                  "unit (1.5s, 250ms, 100us, 10ns), not '%s'",
                  opt->long_name, arg);
        return -1;
    }
    if (!from && ns == 0) {
        cli_error("--%s 0: the window would end where the recording starts, holding nothing",
                  opt->long_name);
        return -1;
    }
    *(from ? &r->ro.from_ns : &r->ro.to_ns) = ns;
    return 0;
}

/* --from at or after --to: an empty window, a mistake. */
static int check_window(const struct cli_reader *r)
{
    if (!r->ro.to_ns || r->ro.from_ns < r->ro.to_ns)
        return 0;
    cli_error("--from %.9g s is not before --%s %.9g s: the window would be empty",
              (double)r->ro.from_ns / 1e9, r->to_option, (double)r->ro.to_ns / 1e9);
    return EXIT_USAGE;
}

/* Threads: as asked, or one per CPU for inputs large enough to gain. */
static unsigned thread_count(const struct cli_reader *r, const struct ember_input *in)
{
    if (r->ro.threads)
        return r->ro.threads;
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int64_t size = ember_input_size(in);
    if (cpus <= 1 || (size >= 0 && size < (16 << 20)))
        return 1;
    return cpus > 16 ? 16 : (unsigned)cpus;
}

static bool gc_filtering(const struct cli_reader *r)
{
    return r->during || r->outside;
}

/* --during gc, --outside gc: one of them, and only gc. */
static int check_gc_options(const struct cli_reader *r)
{
    if (r->during && r->outside) {
        cli_error("--during and --outside: one or the other");
        return EXIT_USAGE;
    }
    const char *what = r->during ? r->during : r->outside;
    if (what && strcmp(what, "gc") != 0) {
        cli_error("--%s %s: expected gc (the OCaml program's GC phases)",
                  r->during ? "during" : "outside", what);
        return EXIT_USAGE;
    }
    return 0;
}

/* The GC phases of the recording at path (perf.data, read as fmt), when
 * filtering or drawing a timeline; the filter hook set in ro. 0, or 1
 * after saying why (filtering needs them; a timeline goes without). */
static int gc_setup(struct cli_reader *r, const struct ember_format *fmt, const char *path,
                    struct ember_read_opts *ro)
{
    if (!gc_filtering(r) && !r->timeline)
        return 0;
    const char *name = path && strcmp(path, "-") ? path : "<stdin>";
    if (strcmp(fmt->name, "perf.data") != 0) {
        if (!gc_filtering(r))
            return 0;
        cli_error("--%s gc: %s is not a perf.data recording (GC phases go with ember record's "
                  "perf.data files)",
                  r->during ? "during" : "outside", name);
        return 1;
    }
    char events[4200];
    if (r->gc_events)
        snprintf(events, sizeof(events), "%s", r->gc_events);
    else if (path && strcmp(path, "-") && r->input_fd < 0)
        snprintf(events, sizeof(events), "%s.events", path);
    else
        events[0] = '\0';
    if (!gc_filtering(r) && (!events[0] || access(events, F_OK) != 0)) {
        /* no GC data: the timeline has samples alone */
        ember_gc_filter_release(&r->gc);
        r->gc = (struct ember_gc_filter){.times = true};
        ro->keep_sample = ember_gc_filter_keep;
        ro->keep_sample_ctx = &r->gc;
        ro->sample_time = ember_gc_filter_time;
        ro->sample_time_ctx = &r->gc;
        return 0;
    }
    if (!events[0]) {
        cli_error("--%s gc: standard input has no runtime events beside it: name them with "
                  "--gc-events FILE",
                  r->during ? "during" : "outside");
        return 1;
    }
    if (access(events, F_OK) != 0) {
        cli_error("%s: no GC phases for it: %s: %s (ember record -o X.data keeps an OCaml 5 "
                  "program's runtime events in X.data.events; --gc-events FILE names them)",
                  name, events, strerror(errno));
        return 1;
    }
    struct ember_diag d;
    ember_diag_clear(&d);
    ember_gc_phases_free(r->gc_phases);
    r->gc_phases = NULL;
    int err = ember_gc_phases_read(&r->gc_phases, events, &d);
    if (err) {
        cli_diag_error(&d, err);
        return 1;
    }
    ember_gc_filter_release(&r->gc);
    r->gc = (struct ember_gc_filter){.g = gc_filtering(r) ? r->gc_phases : NULL,
                                     .during = r->during != NULL,
                                     .times = r->timeline};
    ro->keep_sample = ember_gc_filter_keep;
    ro->keep_sample_ctx = &r->gc;
    ro->sample_time = ember_gc_filter_time;
    ro->sample_time_ctx = &r->gc;
    return 0;
}

static int read_one(struct cli_reader *r, struct ember_profile *p, const char *path)
{
    struct ember_diag d;
    struct ember_input *in;
    const struct ember_format *fmt = NULL;
    ember_diag_clear(&d);
    int err = r->input_fd >= 0 ? ember_input_open_fd(&in, r->input_fd, path, &d)
                               : ember_input_open(&in, path, &d);
    if (err) {
        cli_diag_error(&d, err);
        return 1;
    }
    if (strcmp(r->format, "auto") == 0) {
        err = ember_format_detect(in, &fmt, &d);
    } else if (!(fmt = ember_format_find(r->format))) {
        /* the names come from the registry, so a new format is listed */
        char names[512] = "auto";
        for (const struct ember_format *const *f = ember_formats(); *f; f++)
            snprintf(names + strlen(names), sizeof(names) - strlen(names), ", %s", (*f)->name);
        cli_error("unknown --format '%s' (expected one of: %s)", r->format, names);
        ember_input_close(in);
        return EXIT_USAGE;
    }
    struct ember_read_opts ro = r->ro;
    struct ember_read_stats st;
    memset(&st, 0, sizeof(st));
    ro.threads = thread_count(r, in);
    /* a timeline's samples in time order: perf.data recordings have times */
    ember_profile_keep_sequence(p, r->flamechart ||
                                       (r->timeline && fmt && strcmp(fmt->name, "perf.data") == 0));
    if (!err && gc_setup(r, fmt, path, &ro)) {
        ember_input_close(in);
        return 1;
    }
    if (!err)
        err = ember_format_read(fmt, p, in, &ro, &st, &d);
    uint64_t seen = r->gc.kept + r->gc.dropped;
    bool foreign = (!err || err == -ENODATA) && gc_filtering(r) && seen && r->gc.foreign == seen;
    bool none_kept = err == -ENODATA && gc_filtering(r) && r->gc.dropped;
    if (foreign) {
        cli_error("%s: none of its samples is of process %u, whose runtime events give the GC "
                  "phases (another recording's?)",
                  ember_input_name(in), (unsigned)ember_gc_phases_pid(r->gc_phases));
        err = -EINVAL;
    } else if (none_kept) {
        cli_error("%s: no samples %s GC phases (all %llu were %s)", ember_input_name(in),
                  r->during ? "inside" : "outside", (unsigned long long)r->gc.dropped,
                  r->during ? "outside" : "inside");
    }
    cli_progress_done(&r->progress);
    cli_warnings_flush(&r->warnings);
    if (!err && st.filtered)
        cli_warning("%s: kept the %llu samples of event '%s' and skipped %llu of other events "
                    "such as '%s'%s",
                    ember_input_name(in), (unsigned long long)st.samples, st.kept_event,
                    (unsigned long long)st.filtered, st.other_event,
                    ember_read_opts_string(&ro, "event-filter")
                        ? ""
                        : " (use --event-filter=EVENT to choose)");
    if (err && !foreign && !none_kept)
        cli_diag_error(&d, err);
    ember_input_close(in);
    return err ? 1 : 0;
}

void cli_check_units(const char *type, const char *unit, const char *name,
                     const struct ember_profile *other, const char *other_name,
                     const char *consequence)
{
    if (strcmp(type, ember_profile_sample_type(other)) == 0 &&
        strcmp(unit, ember_profile_unit(other)) == 0)
        return;
    cli_warning("%s measures %s (%s) and %s measures %s (%s): %s", name ? name : "<stdin>", type,
                unit, other_name ? other_name : "<stdin>", ember_profile_sample_type(other),
                ember_profile_unit(other), consequence);
}

/* --event (or --sample-type): the value views show, by name or index. */
static int select_value(const struct cli_reader *r, struct ember_profile *p)
{
    const char *want = r->ro.value;
    if (!want || ember_profile_select(p, want) == 0)
        return 0;
    /* a reader that computes one value for the event asked for (callgrind)
     * has already said what it has */
    if (ember_profile_values(p) == 1)
        return 0;
    char names[EMBER_MAX_VALUES * (EMBER_UNIT_MAX + 2)] = "";
    for (unsigned v = 0; v < ember_profile_values(p); v++)
        snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", v ? ", " : "",
                 ember_profile_value_type(p, v));
    cli_error("no value '%s' in the profile (it has %s)", want, names);
    return 1;
}

int cli_read_profile(struct cli_reader *r, struct ember_profile *p, char **files, int nfiles)
{
    r->ro.warn = cli_warn_cb;
    r->ro.warn_ctx = &r->warnings;
    cli_progress_init(&r->progress);
    r->ro.progress = cli_progress_cb;
    r->ro.progress_ctx = &r->progress;
    int bad = check_gc_options(r);
    if (!bad)
        bad = check_window(r);
    if (bad)
        return bad;
    if (r->timeline && nfiles > 1)
        r->timeline = false; /* one recording's times */
    /* each input has samples, or is an error (ember_format_read); each is
     * read into a profile of its own and added to p by the names of its
     * values (cpu time to cpu time, samples to samples) */
    int ret = read_one(r, p, nfiles ? files[0] : NULL);
    for (int i = 1; i < nfiles && !ret; i++) {
        struct ember_profile *q = ember_profile_new();
        if (!q) {
            cli_error("out of memory");
            return 1;
        }
        ret = read_one(r, q, files[i]);
        if (!ret)
            cli_check_units(ember_profile_sample_type(p), ember_profile_unit(p), files[0], q,
                            files[i],
                            "adding them is meaningless; they are kept as separate values "
                            "and the first is shown (--event chooses)");
        int err = ret ? 0 : ember_profile_merge(p, q);
        if (err) {
            cli_error("cannot add %s to %s: %s", files[i], files[0], strerror(-err));
            ret = 1;
        }
        ember_profile_free(q);
    }
    if (!ret)
        ret = select_value(r, p);
    if (ret)
        return ret;
    int err = r->transform ? ember_transform_apply(r->transform, p) : 0;
    if (err) {
        cli_error("cannot transform the profile: %s", strerror(-err));
        return 1;
    }
    if (r->transform && ember_profile_node_count(p) <= 1) {
        cli_error("no stacks left after --focus/--ignore: nothing to %s", r->verb ? r->verb : "do");
        return 1;
    }
    return 0;
}

int cli_write_gc_timeline(struct cli_reader *r, const struct ember_profile *p, struct cli_output *o,
                          enum cli_timeline how)
{
    struct ember_diag d;
    ember_diag_clear(&d);
    struct ember_sink sink = cli_output_sink(o);
    int err = how == CLI_TIMELINE_PERFETTO
                  ? ember_gc_timeline_perfetto(p, &r->gc, r->gc_phases, &sink, &d)
              : how == CLI_TIMELINE_SPEEDSCOPE
                  ? ember_gc_timeline_speedscope(p, &r->gc, r->gc_phases,
                                                 r->title ? r->title : "timeline", &sink, &d)
                  : ember_gc_timeline_chrome(p, &r->gc, r->gc_phases, &sink, &d);
    return cli_output_finish_doing(o, err, &d, "write the timeline");
}
