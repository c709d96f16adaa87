/*
 * parse_options.c - the option table interpreter (see parse_options.h).
 */
#include "parse_options.h"
#include "cli.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool takes_arg(const struct option *o)
{
    return o->type == OPT_STRING || o->type == OPT_INT || o->type == OPT_UINT ||
           o->type == OPT_DOUBLE || (o->type == OPT_CALLBACK && o->takes_arg);
}

static int set_value(const struct option *o, const char *arg, const char *spelled)
{
    char *end;
    switch (o->type) {
    case OPT_FLAG:
        *(bool *)o->value = true;
        return 0;
    case OPT_STRING:
        *(const char **)o->value = arg;
        return 0;
    case OPT_INT:
    case OPT_UINT: {
        errno = 0;
        long v = strtol(arg, &end, 10);
        if (errno || *end || end == arg || v < (o->type == OPT_UINT ? 0 : INT_MIN) || v > INT_MAX) {
            cli_error("option %s expects %s integer, not '%s'", spelled,
                      o->type == OPT_UINT ? "a non-negative" : "an", arg);
            return -1;
        }
        if (o->type == OPT_INT)
            *(int *)o->value = (int)v;
        else
            *(unsigned *)o->value = (unsigned)v;
        return 0;
    }
    case OPT_DOUBLE: {
        errno = 0;
        double v = strtod(arg, &end);
        /* no option means anything by nan or inf: a NaN passes every "<= 0"
         * check after this one */
        if (errno || *end || end == arg || !isfinite(v)) {
            cli_error("option %s expects a number, not '%s'", spelled, arg);
            return -1;
        }
        *(double *)o->value = v;
        return 0;
    }
    case OPT_CALLBACK:
        return o->cb(o, arg) < 0 ? -1 : 0;
    default:
        return -1;
    }
}

/* The option named by the long name [name, name+len): exact, else a unique prefix. */
static const struct option *find_long(const struct option *opts, const char *name, size_t len,
                                      const char *spelled)
{
    const struct option *found = NULL;
    int matches = 0;
    for (const struct option *o = opts; o->type != OPT_END; o++) {
        if (!o->long_name)
            continue;
        if (strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0)
            return o;
        if (strncmp(o->long_name, name, len) == 0) {
            found = o;
            matches++;
        }
    }
    if (matches == 1)
        return found;
    if (matches > 1) {
        char list[512] = "";
        for (const struct option *o = opts; o->type != OPT_END; o++)
            if (o->long_name && strncmp(o->long_name, name, len) == 0 &&
                strlen(list) + strlen(o->long_name) + 4 < sizeof(list))
                strcat(strcat(list, list[0] ? ", --" : "--"), o->long_name);
        cli_error("option %s is ambiguous (%s)", spelled, list);
    } else {
        cli_error("unknown option '%s'", spelled);
    }
    return NULL;
}

/* Copies an included table to at; whether it opened a heading of its own. */
static bool copy_included(const struct option *table, struct option **at)
{
    bool headed = false;
    for (const struct option *i = table; i && i->type != OPT_END; i++) {
        headed |= i->type == OPT_GROUP;
        *(*at)++ = *i;
    }
    return headed;
}

/* opts with its OPT_INCLUDE rows replaced by the tables they name (one
 * level); free() it. NULL when memory is short. A heading opened inside an
 * included table ends with it: the rows after it are the outer table's,
 * under its heading again (restated), never under the last one included
 * (the GC options were listed as "DTrace options:" so). */
static struct option *flatten(const struct option *opts)
{
    size_t n = 1;
    for (const struct option *o = opts; o->type != OPT_END; o++) {
        n++; /* the row, or the heading restated after an included table */
        for (const struct option *i = o->value; o->type == OPT_INCLUDE && i && i->type != OPT_END;
             i++)
            n++;
    }
    struct option *flat = malloc(n * sizeof(*flat)), *at = flat;
    if (!flat)
        return NULL;
    struct option heading = OPT_GROUP_("Options:");
    bool restate = false;
    for (const struct option *o = opts; o->type != OPT_END; o++) {
        if (o->type == OPT_INCLUDE) {
            restate |= copy_included(o->value, &at);
            continue;
        }
        if (o->type == OPT_GROUP)
            heading = *o;
        else if (restate)
            *at++ = heading;
        restate = false;
        *at++ = *o;
    }
    *at = (struct option)OPT_END_();
    return flat;
}

static int parse_flat(int argc, char **argv, const struct option *opts, const char *usage,
                      const char *description);
static void usage_flat(const char *usage, const char *description, const struct option *opts);

int parse_options(int argc, char **argv, const struct option *opts, const char *usage,
                  const char *description)
{
    struct option *flat = flatten(opts);
    if (!flat) {
        cli_error("out of memory");
        return -1;
    }
    int ret = parse_flat(argc, argv, flat, usage, description);
    free(flat);
    return ret;
}

static int parse_flat(int argc, char **argv, const struct option *opts, const char *usage,
                      const char *description)
{
    int nargs = 0;
    bool only_args = false;
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (only_args || a[0] != '-' || a[1] == '\0') {
            argv[nargs++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_args = true;
            continue;
        }
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            usage_flat(usage, description, opts);
            return -2;
        }
        const struct option *o = NULL;
        const char *arg = NULL;
        char spelled[128];
        if (a[1] == '-') {
            const char *eq = strchr(a + 2, '=');
            size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
            snprintf(spelled, sizeof(spelled), "--%.*s", (int)len, a + 2);
            o = find_long(opts, a + 2, len, spelled);
            if (!o)
                goto bad;
            if (eq) {
                if (!takes_arg(o)) {
                    cli_error("option --%s takes no value", o->long_name);
                    goto bad;
                }
                arg = eq + 1;
            }
        } else {
            for (const struct option *p = opts; p->type != OPT_END; p++)
                if (p->short_name && p->short_name == a[1])
                    o = p;
            snprintf(spelled, sizeof(spelled), "-%c", a[1]);
            if (!o) {
                cli_error("unknown option '%s'", spelled);
                goto bad;
            }
            if (a[2]) {
                if (!takes_arg(o)) {
                    cli_error("option -%c takes no value", a[1]);
                    goto bad;
                }
                arg = a + 2;
            }
        }
        if (o->long_name)
            snprintf(spelled, sizeof(spelled), "--%s", o->long_name);
        if (takes_arg(o) && !arg) {
            if (i + 1 >= argc) {
                cli_error("option %s needs a value (%s)", spelled, o->argh ? o->argh : "ARG");
                goto bad;
            }
            arg = argv[++i];
        }
        if (set_value(o, arg, spelled) < 0)
            goto bad;
    }
    return nargs;
bad:
    fprintf(stderr, "Run '%s --help' for the options.\n", cli_command_name());
    return -1;
}

void usage_with_options(const char *usage, const char *description, const struct option *opts)
{
    struct option *flat = flatten(opts);
    if (flat)
        usage_flat(usage, description, flat);
    free(flat);
}

static void usage_flat(const char *usage, const char *description, const struct option *opts)
{
    printf("usage: %s\n", usage);
    if (description)
        printf("\n%s\n", description);
    /* the first options apart from the description (whose examples they
     * would seem to continue) */
    if (opts->type != OPT_END && opts->type != OPT_GROUP)
        printf("\nOptions:\n");
    for (const struct option *o = opts; o->type != OPT_END; o++) {
        if (o->type == OPT_GROUP) {
            printf("\n%s\n", o->help);
            continue;
        }
        char left[128];
        int n = snprintf(left, sizeof(left), "  %s%c%s%s%s%s", o->short_name ? "-" : "   ",
                         o->short_name ? o->short_name : ' ', o->short_name ? ", " : "",
                         o->long_name ? "--" : "", o->long_name ? o->long_name : "",
                         takes_arg(o) ? "" : "");
        if (takes_arg(o))
            n += snprintf(left + n, sizeof(left) - (size_t)n, " %s", o->argh ? o->argh : "ARG");
        if (n < 30)
            printf("%-30s%s", left, o->help);
        else
            printf("%s\n%30s%s", left, "", o->help);
        if (o->def)
            printf(" (default: %s)", o->def);
        printf("\n");
    }
}
