/*
 * input.c - files, standard input and gzip streams as chunks of lines.
 *
 * Invariants: `carry` holds bytes already read (and decompressed) but not
 * yet handed out, always starting at a line boundary; `lines` counts the
 * newlines handed out so far, so chunks know their first line number.
 */
#include "base/chunk.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { CHUNK_SIZE = 1 << 20, PEEK_SIZE = 64 << 10, ZBUF_SIZE = 256 << 10 };

struct ember_input {
    char name[256];
    int fd; /* -1: reading from memory */
    const char *mem;
    size_t mem_len, mem_pos;
    bool own_fd;
    bool eof; /* the file (or gzip stream) has no more bytes */
    bool gz;
    bool gz_ended; /* the last gzip member ended cleanly */
    z_stream zs;
    unsigned char *zbuf;
    char *carry;
    size_t carry_len, carry_cap;
    uint64_t lines;
    uint64_t consumed;
    int64_t size;
    off_t start; /* a regular file's offset when opened: where its content begins */
};

const char *ember_input_name(const struct ember_input *in)
{
    return in->name;
}

uint64_t ember_input_consumed(const struct ember_input *in)
{
    return in->consumed;
}

int64_t ember_input_size(const struct ember_input *in)
{
    return in->size;
}

static int io_error(struct ember_input *in, struct ember_diag *d, const char *what, int err)
{
    return ember_diag_set(d, -EIO, in->name, 0, "cannot %s: %s", what, strerror(err));
}

/* Reads raw bytes from the file; returns the count, 0 at end, or -EIO. */
static ssize_t raw_read(struct ember_input *in, void *buf, size_t n, struct ember_diag *d)
{
    if (in->fd < 0) {
        size_t k = in->mem_len - in->mem_pos < n ? in->mem_len - in->mem_pos : n;
        memcpy(buf, in->mem + in->mem_pos, k);
        in->mem_pos += k;
        in->consumed += k;
        return (ssize_t)k;
    }
    for (;;) {
        ssize_t r = read(in->fd, buf, n);
        if (r >= 0) {
            in->consumed += (uint64_t)r;
            return r;
        }
        if (errno != EINTR)
            return io_error(in, d, "read", errno);
    }
}

static int gz_start(struct ember_input *in, struct ember_diag *d)
{
    in->zbuf = malloc(ZBUF_SIZE);
    if (!in->zbuf)
        return -ENOMEM;
    memset(&in->zs, 0, sizeof(in->zs));
    if (inflateInit2(&in->zs, 15 + 16) != Z_OK)
        return ember_diag_set(d, -ENOMEM, in->name, 0, "cannot start gzip decompression");
    in->gz = true;
    return 0;
}

/* Decompresses into buf; returns the byte count, 0 at the end, or < 0. */
static ssize_t gz_read(struct ember_input *in, char *buf, size_t n, struct ember_diag *d)
{
    in->zs.next_out = (unsigned char *)buf;
    in->zs.avail_out = (uInt)(n > UINT32_MAX ? UINT32_MAX : n);
    while (in->zs.avail_out == n) {
        if (in->zs.avail_in == 0) {
            ssize_t r = raw_read(in, in->zbuf, ZBUF_SIZE, d);
            if (r < 0)
                return r;
            if (r == 0) {
                /* gzip ends each member with its CRC and size: a stream
                 * cut anywhere, even in that trailer, is told apart */
                if (!in->gz_ended)
                    return ember_diag_set(d, -EINVAL, in->name, 0,
                                          "truncated input: expected the rest of the gzip "
                                          "stream and its trailer (the input ends inside the "
                                          "compressed data, at byte %llu)",
                                          (unsigned long long)in->consumed);
                return 0;
            }
            in->zs.next_in = in->zbuf;
            in->zs.avail_in = (uInt)r;
        }
        if (in->gz_ended) {
            /* Another member follows (concatenated gzip files). */
            inflateReset(&in->zs);
            in->gz_ended = false;
        }
        int z = inflate(&in->zs, Z_NO_FLUSH);
        if (z == Z_STREAM_END) {
            in->gz_ended = true;
        } else if (z != Z_OK && z != Z_BUF_ERROR) {
            return ember_diag_set(d, -EINVAL, in->name, in->lines + 1, "corrupt gzip data (%s)",
                                  in->zs.msg ? in->zs.msg : "zlib error");
        }
    }
    return (ssize_t)(n - in->zs.avail_out);
}

/* Appends up to `want` more content bytes to the carry buffer; returns the
 * count added, 0 at the end, or < 0. */
static ssize_t fill(struct ember_input *in, char *buf, size_t want, struct ember_diag *d)
{
    if (in->eof)
        return 0;
    ssize_t r = in->gz ? gz_read(in, buf, want, d) : raw_read(in, buf, want, d);
    if (r == 0)
        in->eof = true;
    return r;
}

static int sniff(struct ember_input *in, struct ember_diag *d);

/* The input on in->fd: its size when a regular file, and gzip detected. */
static int start_fd(struct ember_input *in, struct ember_input **out, struct ember_diag *d)
{
    struct stat st;
    if (fstat(in->fd, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            int err = ember_diag_set(d, -EISDIR, in->name, 0, "is a directory, not a profile");
            ember_input_close(in);
            return err;
        }
        off_t at = lseek(in->fd, 0, SEEK_CUR);
        if (S_ISREG(st.st_mode) && at >= 0 && at <= st.st_size) {
            in->start = at; /* stdin may be a file read partly before */
            in->size = st.st_size - at;
            posix_fadvise(in->fd, 0, 0, POSIX_FADV_SEQUENTIAL);
        }
    }
    int err = sniff(in, d);
    if (err) {
        ember_input_close(in);
        return err;
    }
    *out = in;
    return 0;
}

int ember_input_open(struct ember_input **out, const char *path, struct ember_diag *d)
{
    struct ember_input *in = calloc(1, sizeof(*in));
    if (!in)
        return -ENOMEM;
    in->size = -1;
    if (!path || strcmp(path, "-") == 0) {
        snprintf(in->name, sizeof(in->name), "<stdin>");
        in->fd = STDIN_FILENO;
    } else {
        snprintf(in->name, sizeof(in->name), "%s", path);
        in->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (in->fd < 0) {
            int err = io_error(in, d, "open", errno);
            free(in);
            return err;
        }
        in->own_fd = true;
    }
    return start_fd(in, out, d);
}

int ember_input_open_fd(struct ember_input **out, int fd, const char *name, struct ember_diag *d)
{
    struct ember_input *in = calloc(1, sizeof(*in));
    if (!in)
        return -ENOMEM;
    in->size = -1;
    snprintf(in->name, sizeof(in->name), "%s", name);
    in->fd = fd;
    return start_fd(in, out, d);
}

/* Starts gzip decompression if the content begins with gzip's magic. */
static int sniff(struct ember_input *in, struct ember_diag *d)
{
    unsigned char magic[2];
    size_t got = 0;
    while (got < 2) {
        ssize_t r = raw_read(in, magic + got, 2 - got, d);
        if (r < 0)
            return (int)r; /* the caller closes in */
        if (r == 0)
            break;
        got += (size_t)r;
    }
    int err = 0;
    if (got == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
        err = gz_start(in, d);
        if (!err) {
            memcpy(in->zbuf, magic, 2);
            in->zs.next_in = in->zbuf;
            in->zs.avail_in = 2;
        }
    } else if (got > 0) {
        err = EMBER_VEC_RESERVE(in->carry, in->carry_cap, got);
        if (!err) {
            memcpy(in->carry, magic, got);
            in->carry_len = got;
        }
    } else {
        in->eof = true;
    }
    return err;
}

int ember_input_open_memory(struct ember_input **out, const void *data, size_t len,
                            const char *name, struct ember_diag *d)
{
    struct ember_input *in = calloc(1, sizeof(*in));
    if (!in)
        return -ENOMEM;
    snprintf(in->name, sizeof(in->name), "%s", name);
    in->fd = -1;
    in->mem = data;
    in->mem_len = len;
    in->size = (int64_t)len;
    int err = sniff(in, d);
    if (err) {
        ember_input_close(in);
        return err;
    }
    *out = in;
    return 0;
}

void ember_input_close(struct ember_input *in)
{
    if (!in)
        return;
    if (in->gz)
        inflateEnd(&in->zs);
    if (in->own_fd && in->fd >= 0)
        close(in->fd);
    free(in->zbuf);
    free(in->carry);
    free(in);
}

bool ember_input_seekable(const struct ember_input *in)
{
    return !in->gz && in->size >= 0;
}

int ember_input_pread(struct ember_input *in, void *buf, size_t n, uint64_t off, size_t *got,
                      struct ember_diag *d)
{
    *got = 0;
    if (!ember_input_seekable(in))
        return -ESPIPE;
    if (in->fd < 0) {
        size_t k = off < in->mem_len ? in->mem_len - (size_t)off : 0;
        *got = k < n ? k : n;
        if (*got)
            memcpy(buf, in->mem + off, *got);
        return 0;
    }
    while (*got < n) {
        ssize_t r = pread(in->fd, (char *)buf + *got, n - *got, in->start + (off_t)(off + *got));
        if (r == 0)
            return 0;
        if (r < 0 && errno != EINTR)
            return io_error(in, d, "read", errno);
        *got += r > 0 ? (size_t)r : 0;
    }
    return 0;
}

int ember_input_peek_at_least(struct ember_input *in, size_t want, const char **data, size_t *len,
                              struct ember_diag *d)
{
    while (in->carry_len < want && !in->eof) {
        if (EMBER_VEC_RESERVE(in->carry, in->carry_cap, want) < 0)
            return -ENOMEM;
        ssize_t r = fill(in, in->carry + in->carry_len, want - in->carry_len, d);
        if (r < 0)
            return (int)r;
        in->carry_len += (size_t)r;
    }
    *data = in->carry;
    *len = in->carry_len;
    return 0;
}

int ember_input_peek(struct ember_input *in, const char **data, size_t *len, struct ember_diag *d)
{
    return ember_input_peek_at_least(in, PEEK_SIZE, data, len, d);
}

/* Where the chunk p[0, n) may end: just after the last line (or sample)
 * boundary, or 0 if there is none. p[0] starts a line; the boundaries
 * before `from` were looked at already (none was one). */
static size_t find_cut(const char *p, size_t n, size_t from, enum ember_cut cut)
{
    if (cut == EMBER_CUT_NONE || cut == EMBER_CUT_BYTES)
        return n;
    while (n > from) {
        const char *nl = memrchr(p + from, '\n', n - from);
        if (!nl)
            return 0;
        size_t at = (size_t)(nl - p);
        if (cut == EMBER_CUT_LINE || ember_blank_line_end(p, at))
            return at + 1;
        n = at;
    }
    return 0;
}

/* Counting newlines is on the serial path of threaded reading, so it goes
 * 16 bytes at a time. */
size_t ember_count_lines(const char *p, size_t n)
{
    size_t count = 0, i = 0;
#ifdef __SSE2__
    const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
    while (i + 16 <= n) {
        /* per-byte counters (a match is -1), summed before they can wrap */
        __m128i acc = zero;
        for (int k = 0; k < 255 && i + 16 <= n; k++, i += 16)
            acc = _mm_sub_epi8(acc, _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), nl));
        __m128i sums = _mm_sad_epu8(acc, zero);
        count += (size_t)_mm_cvtsi128_si32(sums) + (size_t)_mm_extract_epi16(sums, 4);
    }
#endif
    for (; i < n; i++)
        count += p[i] == '\n';
    return count;
}

int ember_chunk_reserve(struct ember_chunk *c, size_t need)
{
    if (need <= c->cap)
        return 0;
    size_t cap = c->cap ? c->cap + c->cap / 2 : 64;
    if (cap < need)
        cap = need;
    void *p = NULL;
    if (posix_memalign(&p, 64, cap) != 0)
        return -ENOMEM;
    if (c->len)
        memcpy(p, c->data, c->len < cap ? c->len : cap);
    if (c->data)
        free(c->data - c->skip);
    c->data = p;
    c->cap = cap;
    c->skip = 0;
    return 0;
}

/* c emptied, its data pad bytes into its buffer, with room for need. */
static int chunk_at(struct ember_chunk *c, size_t pad, size_t need)
{
    c->len = 0;
    if (c->cap + c->skip < pad + need && ember_chunk_reserve(c, pad + need) < 0)
        return -ENOMEM;
    c->data = c->data - c->skip + pad;
    c->cap = c->cap + c->skip - pad;
    c->skip = pad;
    return 0;
}

int ember_input_read_chunk(struct ember_input *in, struct ember_chunk *c, enum ember_cut cut,
                           struct ember_diag *d)
{
    return ember_input_read_chunk_upto(in, c, cut, CHUNK_SIZE, d);
}

int ember_input_read_chunk_upto(struct ember_input *in, struct ember_chunk *c, enum ember_cut cut,
                                size_t want, struct ember_diag *d)
{
    /* the bytes read land 64-byte aligned after a line carried over; a
     * binary format's data starts aligned (its only carry is the magic
     * sniffed, before the first chunk) */
    size_t pad = cut == EMBER_CUT_BYTES ? 0 : (64 - in->carry_len % 64) % 64;
    if (chunk_at(c, pad, in->carry_len + want) < 0)
        return -ENOMEM;
    if (in->carry_len)
        memcpy(c->data, in->carry, in->carry_len);
    c->len = in->carry_len;
    in->carry_len = 0;
    size_t scanned = 0; /* no boundary ends before this offset */
    for (;;) {
        if (c->len == c->cap) {
            if (c->cap >= EMBER_MAX_LINE && cut == EMBER_CUT_LINE)
                return ember_diag_set(d, -ERANGE, in->name, in->lines + 1,
                                      "line longer than %zu MiB", EMBER_MAX_LINE >> 20);
            if (c->cap >= EMBER_MAX_LINE)
                cut = EMBER_CUT_LINE; /* a "sample" this long is garbage */
            if (ember_chunk_reserve(c, c->cap * 2) < 0)
                return -ENOMEM;
        }
        ssize_t r = fill(in, c->data + c->len, c->cap - c->len, d);
        if (r < 0)
            return (int)r;
        if (r == 0)
            break;
        c->len += (size_t)r;
        size_t at = find_cut(c->data, c->len, scanned, cut);
        if (at) {
            size_t tail = c->len - at;
            if (EMBER_VEC_RESERVE(in->carry, in->carry_cap, tail) < 0)
                return -ENOMEM;
            if (tail) /* carry may still be NULL (memcpy(NULL, p, 0) is undefined) */
                memcpy(in->carry, c->data + at, tail);
            in->carry_len = tail;
            c->len = at;
            break;
        }
        scanned = c->len;
    }
    if (c->len == 0)
        return 0;
    c->first_line = in->lines + 1;
    if (cut != EMBER_CUT_BYTES)
        in->lines += ember_count_lines(c->data, c->len);
    return 1;
}

void ember_input_mark_consumed(struct ember_input *in, uint64_t n)
{
    if (n > in->consumed)
        in->consumed = n;
}

uint64_t ember_input_lines(const struct ember_input *in)
{
    return in->lines;
}

void ember_chunk_release(struct ember_chunk *c)
{
    free(c->data ? c->data - c->skip : NULL);
    memset(c, 0, sizeof(*c));
}
