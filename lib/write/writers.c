/*
 * writers.c - the writers' table (see ember/write.h): each writer's row
 * and the lookups by name and by file name ending.
 */
#include "write/write_impl.h"
#include "ember/write.h"

#include <string.h>

static int write_folded(const struct ember_profile *p, const struct ember_convert_opts *o,
                        const struct ember_sink *out, struct ember_diag *d)
{
    (void)o;
    (void)d;
    return ember_write_folded(p, out);
}

static int write_tsv(const struct ember_profile *p, const struct ember_convert_opts *o,
                     const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_convert_opts t = ember_convert_opts_fill(o);
    t.separator = '\t';
    return ember_write_csv(p, &t, out, d);
}

/* A flame graph with flamegraph.pl's defaults, titled with the name. */
static int write_svg(const struct ember_profile *p, const struct ember_convert_opts *o,
                     const struct ember_sink *out, struct ember_diag *d)
{
    struct ember_flame_opts fo;
    ember_flame_opts_default(&fo);
    if (o && o->name)
        fo.subtitle = o->name;
    return ember_flame_render(p, &fo, out, d);
}

/* Descriptions fit 'ember convert --help': 66 columns. */
static const struct ember_writer_format speedscope = {
    "speedscope", ".speedscope.json", "speedscope JSON (speedscope.app); evented with --time-order",
    false, ember_write_speedscope};
static const struct ember_writer_format pprof = {
    "pprof", ".pb.gz .pb", "pprof's gzipped protobuf (`go tool pprof -top F`, -http=:8080)", true,
    ember_write_pprof};
static const struct ember_writer_format chrome = {
    "chrome", ".trace.json .json", "Chrome trace JSON: a flame chart for Perfetto, speedscope",
    false, ember_write_chrome};
static const struct ember_writer_format folded = {"folded", ".folded .collapsed",
                                                  "folded stacks, as 'ember collapse' writes them",
                                                  false, write_folded};
static const struct ember_writer_format csv = {
    "csv", ".csv", "one row per stack, a column per value (RFC 4180), for pandas", false,
    ember_write_csv};
static const struct ember_writer_format tsv = {"tsv", ".tsv", "the same, tab-separated", false,
                                               write_tsv};
static const struct ember_writer_format svg = {
    "svg", ".svg", "a flame graph, flamegraph.pl's defaults ('ember flamegraph': all)", false,
    write_svg};

static const struct ember_writer_format *const table[] = {
    &speedscope, &pprof, &chrome, &folded, &csv, &tsv, &svg, NULL,
};

const struct ember_writer_format *const *ember_writer_formats(void)
{
    return table;
}

const struct ember_writer_format *ember_writer_find(const char *name)
{
    for (size_t i = 0; table[i]; i++)
        if (strcmp(table[i]->name, name) == 0)
            return table[i];
    return NULL;
}

/* Does path end with one of the space-separated endings in list? */
static bool ends_with_one(const char *path, const char *list)
{
    size_t plen = strlen(path);
    for (const char *e = list; *e;) {
        size_t n = strcspn(e, " ");
        if (n && plen > n && strncmp(path + plen - n, e, n) == 0)
            return true;
        e += n + (e[n] == ' ');
    }
    return false;
}

const struct ember_writer_format *ember_writer_for_path(const char *path)
{
    for (size_t i = 0; table[i]; i++) /* ".trace.json" before ".json": table order */
        if (ends_with_one(path, table[i]->extensions))
            return table[i];
    return NULL;
}
