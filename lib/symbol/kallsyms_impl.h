/*
 * kallsyms_impl.h - what kallsyms.c's parsing and kallsyms_read.c's
 * reading share, and the table's entries (library-internal to the
 * kallsyms table, and its fuzz target).
 */
#ifndef EMBER_SYMBOL_KALLSYMS_IMPL_H
#define EMBER_SYMBOL_KALLSYMS_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksym {
    uint64_t start, end;
    uint32_t name;   /* offset in names */
    uint32_t module; /* offset in names of "[module]", or UINT32_MAX */
    uint32_t order;  /* line in kallsyms, for ties */
};

/* A piece of the text, p[0, n) (lines may be cut at either end): 0, or a
 * negative errno that ends the reading. */
typedef int ks_piece_fn(void *ctx, const char *p, size_t n);

/* fd read to its end, each piece handed to piece in order; beside: read
 * on a thread of its own while this one takes the pieces (here where no
 * thread can start). 0, or the reading's -errno, or piece's. */
int ks_read_pieces(int fd, bool beside, ks_piece_fn *piece, void *ctx);

#endif
