/*
 * callgrind_read.h - the callgrind reader's state, shared by callgrind.c
 * (the lines of the body, the reading), callgrind_header.c (the "key:
 * value" lines) and callgrind_graph.c (names and the call graph)
 * (library-internal).
 *
 * Invariants: colmap maps the current part's event columns to events
 * (CG_NONE: dropped); sums[c] is the part's cost lines' sum of column c;
 * sel is CG_NONE until a part has the event shown.
 */
#ifndef EMBER_READ_CALLGRIND_READ_H
#define EMBER_READ_CALLGRIND_READ_H

#include "read/callgrind/callgrind_impl.h"
#include "base/u64map.h"

#include <string.h>

enum { MAX_COLUMNS = 64 /* positions + events on a cost line */ };

/* Name tables: "fl=(3) x.c" then "fl=(3)". */
enum name_kind { NAME_FILE, NAME_FN, NAME_OBJ, NAME_KINDS };

struct cg_reader {
    struct ember_profile *p;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    uint64_t line;
    struct ember_profile *names;         /* interning of every name read */
    struct ember_u64map ids[NAME_KINDS]; /* compression id -> name */
    struct ember_u64map func_ids;        /* (file name << 32 | fn name) -> func */
    struct ember_u64map edge_ids;        /* (from << 32 | to) -> edge */
    struct cg_graph g;
    /* the current position */
    uint32_t fl, pos_file, fn, cfi, cfn;
    bool have_fl, have_fn, have_cfi, have_cfn;
    /* every event, by name across parts (a value of the profile each) */
    char evname[EMBER_MAX_VALUES][EMBER_UNIT_MAX];
    unsigned nev, sel; /* sel: the event shown, CG_NONE until a part has it */
    /* the cost line layout of the current part */
    unsigned npos, nevents;
    unsigned colmap[MAX_COLUMNS]; /* its event columns -> events; CG_NONE: dropped */
    bool have_events;
    char first_events[256];
    uint64_t events_line;
    int64_t prev[MAX_COLUMNS];
    /* a calls= line waits for its cost line */
    bool pending_call;
    uint64_t call_line;
    /* the part being read, and the line that must close it */
    char events[256];            /* this part's "events:" names */
    int64_t sums[MAX_COLUMNS];   /* its cost lines, per event */
    const char *closing;         /* "totals:" (callgrind), "summary:" (cachegrind), or NULL */
    bool in_part, costs_in_part; /* between "events:" and the closing line */
    uint64_t part_line, last_line;
};

/* A cost line's event columns, as (event, cost) pairs: v[c] is column c
 * of the part's events. */
struct costs {
    int64_t v[MAX_COLUMNS];
    unsigned n;
};

static inline bool is_blank(char c)
{
    return c == ' ' || c == '\t';
}

static inline bool key_is(const char *s, size_t klen, const char *key)
{
    return strlen(key) == klen && memcmp(s, key, klen) == 0;
}

/* ---- callgrind.c */

/* An error at the current line: -EINVAL, in r->d. */
int ember_callgrind_error(struct cg_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* A line skipped: counted, and told when r->o->warn is set. */
void ember_callgrind_warn(struct cg_reader *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The next blank-separated word of [s, s+n) from *i: its start and length,
 * length 0 at the end. */
size_t ember_callgrind_next_word(const char *s, size_t n, size_t *i, size_t *start);
/* A number: decimal or 0x hex; false if [s, s+n) is not one. */
bool ember_callgrind_parse_u64(const char *s, size_t n, uint64_t *v);

/* ---- callgrind_header.c */

/* A header line "key: value", the key [s, s + klen). */
int ember_callgrind_header(struct cg_reader *r, const char *s, size_t klen, const char *v,
                           size_t vn);

/* ---- callgrind_graph.c */

/* "(id) name", "(id)" or "name" of a name table, its name's id into *id. */
int ember_callgrind_name(struct cg_reader *r, enum name_kind kind, const char *s, size_t n,
                         uint32_t *id);
/* The error of a cost that overflows 63 bits. */
int ember_callgrind_overflow(struct cg_reader *r);
/* A cost line's costs: the current function's own, or a call's. */
int ember_callgrind_add_self(struct cg_reader *r, const struct costs *c);
int ember_callgrind_add_call(struct cg_reader *r, const struct costs *c);

#endif
