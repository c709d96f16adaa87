/*
 * fuzz_kallsyms.c - libFuzzer target for the kallsyms table (a
 * recording's copy in perf's build-id cache is read as /proc/kallsyms
 * is): any bytes as the file. The table must not depend on how the file
 * is cut into pieces (a fuzzing build's are 64 bytes, so lines are cut
 * often) nor on which thread reads it: the input is read here and beside
 * (kallsyms_read.c), as it is and after a line the parser drops, which
 * moves every cut, and the four tables must be one.
 */
#include "symbol/kallsyms.h"
#include "symbol/kallsyms_impl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* The table of data, after a dropped line of junk bytes if junk. */
static int table_of(const uint8_t *data, size_t size, size_t junk, bool beside,
                    struct ember_kallsyms *k)
{
    char line[64], path[64];
    int fd = memfd_create("kallsyms", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    memset(line, '#', junk);
    line[junk] = '\n';
    if ((junk && write(fd, line, junk + 1) != (ssize_t)junk + 1) ||
        (size && write(fd, data, size) != (ssize_t)size))
        abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    ember_kallsyms_init(k);
    k->read_beside = beside;
    int err = ember_kallsyms_read(k, path);
    close(fd);
    return err;
}

static bool same_name(const struct ember_kallsyms *a, uint32_t x, const struct ember_kallsyms *b,
                      uint32_t y)
{
    if (x == UINT32_MAX || y == UINT32_MAX)
        return x == y;
    return strcmp(a->names + x, b->names + y) == 0;
}

static void same(const struct ember_kallsyms *a, const struct ember_kallsyms *b)
{
    if (a->n != b->n || a->nkernel != b->nkernel || a->have_text != b->have_text ||
        a->text_now != b->text_now)
        abort();
    for (size_t i = 0; i < a->n; i++) {
        const struct ksym *x = &a->syms[i], *y = &b->syms[i];
        if (x->start != y->start || x->end != y->end || !same_name(a, x->name, b, y->name) ||
            !same_name(a, x->module, b, y->module))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ember_kallsyms k[4];
    int err[4];
    for (int i = 0; i < 4; i++)
        err[i] = table_of(data, size, i & 1 ? 37 : 0, i >= 2, &k[i]);
    for (int i = 1; i < 4; i++) {
        if (err[i] != err[0])
            abort();
        if (!err[0])
            same(&k[0], &k[i]);
    }
    for (int i = 0; i < 4; i++)
        ember_kallsyms_release(&k[i]);
    return 0;
}
