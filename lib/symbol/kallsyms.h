/*
 * kallsyms.h - kernel symbols from /proc/kallsyms, as perf script finds
 * them when no vmlinux is at hand (library-internal; see kallsyms.c for
 * perf's rules). Any reader of recorded kernel addresses can use it: it
 * takes the recorded kernel's build-id and _text as plain data.
 * Invariants: the table is read once (loaded); when it is not usable, why
 * says why kernel frames stay unknown.
 */
#ifndef EMBER_SYMBOL_KALLSYMS_H
#define EMBER_SYMBOL_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ember_kallsyms {
    struct ksym *syms; /* the kernel's first (nkernel), then the modules' */
    size_t n, cap, nkernel;
    char *names;
    size_t nlen, ncap;
    uint64_t text_now, delta;
    bool have_text, loaded, usable;
    bool settled;     /* its ends fixed (read settles it, where it has addresses) */
    bool read_beside; /* the file read on a thread of its own while this one parses it */
    char why[256];    /* why kernel frames stay unknown */
};

struct ember_kallsyms_source {
    const char *kallsyms, *notes; /* /proc/kallsyms, /sys/kernel/notes */
    const char *cached;           /* perf's copy of the recorded kernel's kallsyms, or NULL */
    const uint8_t *build_id;      /* the recorded kernel's, or none */
    size_t build_id_len;
    bool have_text; /* the recorded address of _text */
    uint64_t text;
};

void ember_kallsyms_init(struct ember_kallsyms *k);
void ember_kallsyms_release(struct ember_kallsyms *k);
/* Reads the table once: 0 (usable, or not and why says why), -ENOMEM. */
int ember_kallsyms_load(struct ember_kallsyms *k, const struct ember_kallsyms_source *src);
/* The same in steps, so that the file can be read before src is known
 * (on a thread of its own, from a recording's start): the file the table
 * of src is read from (src->kallsyms where the running kernel is the
 * recorded one, else perf's copy; NULL: none, why says why); the file
 * read into k and its table settled (sorted as perf sorts it: the work
 * that does not depend on src; no other call on k meanwhile): 0 or its
 * error; the table
 * made src's from the read's error err: 0 (usable or not), -ENOMEM. */
const char *ember_kallsyms_path(struct ember_kallsyms *k, const struct ember_kallsyms_source *src);
int ember_kallsyms_read(struct ember_kallsyms *k, const char *path);
int ember_kallsyms_finish(struct ember_kallsyms *k, const struct ember_kallsyms_source *src,
                          const char *path, int err);
/* The symbol at a recorded kernel address (module: "[name]" or NULL for
 * the kernel proper): 0, or -ENOENT. */
int ember_kallsyms_find(const struct ember_kallsyms *k, const char *module, size_t mlen,
                        uint64_t addr, const char **name, uint64_t *offset);

#endif
