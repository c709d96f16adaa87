/*
 * chunk.h - reading an input as chunks of whole lines (library-internal).
 *
 * A chunk holds complete lines: it ends just after a '\n', except the last
 * chunk of an input that does not end in one. With EMBER_CUT_SAMPLE a chunk
 * also ends after a blank line, so that no perf sample straddles two chunks
 * and chunks can be parsed by different threads.
 */
#ifndef EMBER_BASE_CHUNK_H
#define EMBER_BASE_CHUNK_H

#include "ember/base.h"

#include <stdbool.h>

/* EMBER_CUT_NONE: chunks end anywhere, for formats with their own
 * tokenizer (JSON), so that a long line is never held whole.
 * EMBER_CUT_BYTES: the same for binary formats (perf.data, pprof, heap and
 * memtrace recordings), whose lines are not counted: counting the '\n'
 * bytes of a DWARF perf.data was 4% of reading it. */
enum ember_cut { EMBER_CUT_LINE, EMBER_CUT_SAMPLE, EMBER_CUT_NONE, EMBER_CUT_BYTES };

struct ember_chunk {
    char *data;
    size_t len, cap;     /* cap: the bytes from data on */
    uint64_t first_line; /* 1-based number of the chunk's first line */
    size_t skip;         /* data's place in its buffer (ember_chunk_reserve's) */
};

/* Does the line that the '\n' at p[q] ends hold nothing ("" or "\r")? A
 * `perf script` sample ends there, whatever came before: EMBER_CUT_SAMPLE
 * cuts just after such a line, and the perf reader's threads start their
 * byte ranges after one (or at an event line), by this one rule. p[0]
 * starts a line (at q < 2 the bytes before the line are p's start). */
static inline bool ember_blank_line_end(const char *p, size_t q)
{
    if (q == 0 || p[q - 1] == '\n')
        return true;
    return p[q - 1] == '\r' && (q == 1 || p[q - 2] == '\n');
}

/* Longest line (or sample, for EMBER_CUT_SAMPLE) accepted. */
#define EMBER_MAX_LINE ((size_t)256 << 20)

/* Fills c with the next chunk: returns 1, or 0 at the end of the input, or
 * a negative error (with d filled). */
int ember_input_read_chunk(struct ember_input *in, struct ember_chunk *c, enum ember_cut cut,
                           struct ember_diag *d);
/* The same, reading about want bytes at a time (more if a line needs). */
int ember_input_read_chunk_upto(struct ember_input *in, struct ember_chunk *c, enum ember_cut cut,
                                size_t want, struct ember_diag *d);
void ember_chunk_release(struct ember_chunk *c);
/* Room for need bytes in c->data, its first c->len kept, the buffer
 * aligned to 64 bytes: read() and pread() copy into it several times
 * faster than into malloc's 16-byte alignment on some processors (AMD
 * EPYC here: 6.5-7.9 GB/s against 1.4-2.1 GB/s, a DWARF perf.data's
 * 470 MB read in 0.06 s against 0.25-0.34 s; a line carried over to the
 * next chunk is placed so that the bytes read after it are aligned, a
 * binary format's chunk starts aligned).
 * Readers that fill a chunk themselves grow it with this; 0 or -ENOMEM
 * (c unchanged). */
int ember_chunk_reserve(struct ember_chunk *c, size_t need);

/* The first bytes of the content, as ember_input_peek, but at least want
 * of them unless the input is shorter (then *len < want). */
int ember_input_peek_at_least(struct ember_input *in, size_t want, const char **data, size_t *len,
                              struct ember_diag *d);

/* Bytes of the content at offset off, without moving the sequential
 * reading: for readers that index a file and then read its parts (the heap
 * recording). Only for an input that can be read at any place: a regular
 * file or memory, not gzip-compressed (ember_input_seekable); -ESPIPE
 * otherwise. *got < n only at the input's end. */
bool ember_input_seekable(const struct ember_input *in);
int ember_input_pread(struct ember_input *in, void *buf, size_t n, uint64_t off, size_t *got,
                      struct ember_diag *d);

/* Readers by ember_input_pread tell how far they have read, for progress
 * (ember_input_consumed): the count becomes at least n, the bytes before
 * the content's offset n. */
void ember_input_mark_consumed(struct ember_input *in, uint64_t n);

/* Lines read so far: the number of '\n' in the chunks returned. */
uint64_t ember_input_lines(const struct ember_input *in);

/* Number of '\n' in [p, p + n). */
size_t ember_count_lines(const char *p, size_t n);

#endif
