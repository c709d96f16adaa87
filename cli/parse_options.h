/*
 * parse_options.h - declarative command-line options (after git's
 * parse-options): each command describes its options in a table, and the
 * same table parses argv and prints --help.
 *
 * Accepted forms: --name=value, --name value, -x value, -xvalue, unique
 * prefixes of long names (--color for --colors, as Perl's Getopt::Long
 * allows, so FlameGraph command lines keep working), "--" to end options,
 * and "-" as a file name (standard input).
 */
#ifndef EMBER_CLI_PARSE_OPTIONS_H
#define EMBER_CLI_PARSE_OPTIONS_H

#include <stdbool.h>

enum opt_type {
    OPT_END,
    OPT_GROUP,    /* a heading in --help */
    OPT_FLAG,     /* bool */
    OPT_STRING,   /* const char * */
    OPT_INT,      /* int */
    OPT_UINT,     /* unsigned */
    OPT_DOUBLE,   /* double */
    OPT_CALLBACK, /* cb(opt, arg); arg NULL for flags */
    OPT_INCLUDE,  /* value: another table (ending with OPT_END), read in place */
};

struct option {
    enum opt_type type;
    const char *long_name;
    char short_name;
    void *value;
    const char *argh; /* name of the argument in --help, e.g. "FILE" */
    const char *help;
    const char *def; /* the default, as shown in --help */
    int (*cb)(const struct option *opt, const char *arg);
    bool takes_arg; /* for OPT_CALLBACK */
};

#define OPT_GROUP_(h)                                                                              \
    {                                                                                              \
        OPT_GROUP, NULL, 0, NULL, NULL, (h), NULL, NULL, false                                     \
    }
#define OPT_END_()                                                                                 \
    {                                                                                              \
        OPT_END, NULL, 0, NULL, NULL, NULL, NULL, NULL, false                                      \
    }

/*
 * Parses argv[1..] (argv[0] is the command name). Non-option arguments are
 * moved to the front of argv in order; returns their count, or -1 after
 * printing an error (then the caller exits 2), or -2 after printing --help
 * (the caller exits 0).
 */
int parse_options(int argc, char **argv, const struct option *opts, const char *usage,
                  const char *description);

/* Prints the usage line and the options table. */
void usage_with_options(const char *usage, const char *description, const struct option *opts);

#endif
