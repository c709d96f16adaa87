/*
 * heap_archive.c - the recordings of `ember record --heap`'s processes
 * made one (ember/record.h: ember_heap_archive): the files libember-heap
 * wrote into a directory, back to back in the order their processes
 * started (the headers' start_mono_ns).
 *
 * Invariants: each file contributes exactly its header's size (4096 +
 * chunks * chunk_size), padded with zeros when the file is shorter (they
 * read as unclaimed chunks), so a reader finds the next process's header
 * right after; into a regular file the copy keeps the holes (a thread
 * claims a whole chunk, a short-lived one writes little of it); a file without a whole header
 * (magic last: a process killed as it began) or with a header that does not make sense is left out;
 * the headers are read once, so a process still writing (a grandchild the command left running)
 * contributes what its header said then.
 */
#include "ember/record.h"
#include "base/diag.h"
#include "wire/heap_format.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { MAX_PROCESSES = 1 << 16 };

/* One process's file in the directory. */
struct heap_file {
    char name[64];
    uint64_t start, size, seq; /* start_mono_ns; 4096 + chunks * chunk_size; events */
};

static int by_start(const void *a, const void *b)
{
    const struct heap_file *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The header of name in the directory dirfd: false for a file without a
 * whole, sensible one. */
static bool read_header(int dirfd, const char *name, struct heap_file *f)
{
    struct ember_heap_header h;
    int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    bool ok = fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
              h.magic == EMBER_HEAP_MAGIC && h.chunk_size && h.chunk_size % 4096 == 0 &&
              h.header_size == EMBER_HEAP_HEADER_SIZE;
    if (fd >= 0)
        close(fd);
    if (ok) {
        snprintf(f->name, sizeof(f->name), "%s", name);
        f->start = h.start_mono_ns;
        f->size = EMBER_HEAP_HEADER_SIZE + (uint64_t)h.chunks * h.chunk_size;
        f->seq = h.seq;
    }
    return ok;
}

/* The processes' files in dir, in the order they started: how many (in
 * *files, to free), or a negative errno. */
static int list_files(const char *dir, struct heap_file **files, struct ember_diag *d)
{
    DIR *dh = opendir(dir);
    if (!dh)
        return ember_diag_set(d, -errno, dir, 0, "cannot read the directory: %s", strerror(errno));
    size_t n = 0, cap = 0;
    struct heap_file *v = NULL;
    struct dirent *e;
    int err = 0;
    while (!err && (e = readdir(dh)) != NULL) {
        if (strncmp(e->d_name, "heap.", 5) != 0 || strlen(e->d_name) >= sizeof(v->name))
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            struct heap_file *grown = cap <= MAX_PROCESSES ? realloc(v, cap * sizeof(*v)) : NULL;
            if (!grown)
                err = ember_diag_set(d, -ENOMEM, dir, 0, "too many processes");
            else
                v = grown;
        }
        if (!err && read_header(dirfd(dh), e->d_name, &v[n]))
            n++;
    }
    closedir(dh);
    if (err) {
        free(v);
        return err;
    }
    if (n)
        qsort(v, n, sizeof(*v), by_start);
    *files = v;
    return (int)n;
}

/* size bytes of in (then zeros if it is shorter) at out's position. */
static int copy_padded(int in, int out, uint64_t size)
{
    char buf[1 << 16];
    uint64_t done = 0;
    while (done < size) {
        size_t want = size - done < sizeof(buf) ? (size_t)(size - done) : sizeof(buf);
        ssize_t n = read(in, buf, want);
        if (n < 0)
            return -errno;
        if (n == 0) { /* cut short: unclaimed chunks read as zeros */
            memset(buf, 0, want);
            n = (ssize_t)want;
        }
        for (ssize_t w = 0, k; w < n; w += k)
            if ((k = write(out, buf + w, (size_t)(n - w))) < 0)
                return -errno;
        done += (uint64_t)n;
    }
    return 0;
}

static int pwrite_all(int fd, const char *buf, size_t n, off_t at)
{
    for (size_t w = 0; w < n;) {
        ssize_t k = pwrite(fd, buf + w, n - w, at + (off_t)w);
        if (k < 0)
            return -errno;
        w += (size_t)k;
    }
    return 0;
}

/* in's first size bytes into the regular file out at base, its holes
 * skipped (a thread's chunk is claimed whole, and mostly not written when
 * the thread is short-lived): out is extended to its size at the end, so
 * what is skipped reads as zeros there too. */
static int copy_sparse(int in, int out, off_t base, uint64_t size)
{
    char buf[1 << 16];
    off_t pos = 0, end = (off_t)size;
    while (pos < end) {
        off_t data = lseek(in, pos, SEEK_DATA);
        if (data < 0 || data >= end)
            return data < 0 && errno != ENXIO ? -errno : 0; /* ENXIO: no data after pos */
        off_t hole = lseek(in, data, SEEK_HOLE);
        if (hole < 0)
            return -errno;
        for (pos = data; pos < (hole < end ? hole : end);) {
            off_t left = (hole < end ? hole : end) - pos;
            ssize_t n = pread(in, buf, left < (off_t)sizeof(buf) ? (size_t)left : sizeof(buf), pos);
            if (n <= 0)
                return n < 0 ? -errno : 0; /* cut short: zeros */
            int err = pwrite_all(out, buf, (size_t)n, base + pos);
            if (err)
                return err;
            pos += n;
        }
    }
    return 0;
}

/* A process's file into out: sparse into a regular file at *at (moved
 * past it), else in sequence. */
static int copy_one(const char *path, int out, off_t *at, uint64_t size)
{
    int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (in < 0)
        return -errno;
    int err = *at >= 0 ? copy_sparse(in, out, *at, size) : copy_padded(in, out, size);
    close(in);
    if (*at >= 0)
        *at += (off_t)size;
    return err;
}

int ember_heap_archive(const char *dir, int out_fd, struct ember_heap_archive_stats *st,
                       struct ember_diag *d)
{
    memset(st, 0, sizeof(*st));
    struct stat sb;
    off_t at = fstat(out_fd, &sb) == 0 && S_ISREG(sb.st_mode) ? lseek(out_fd, 0, SEEK_CUR) : -1;
    struct heap_file *files = NULL;
    int n = list_files(dir, &files, d);
    int err = n < 0 ? n : 0;
    for (int i = 0; i < n && !err; i++) {
        char path[4096 + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
        err = copy_one(path, out_fd, &at, files[i].size);
        if (err)
            ember_diag_set(d, err, path, 0, "cannot copy it into the recording: %s",
                           strerror(-err));
        st->processes++;
        st->events += files[i].seq;
        st->bytes += files[i].size;
    }
    free(files);
    /* the last holes: the file's size, and the position after it */
    if (!err && at >= 0 && fstat(out_fd, &sb) == 0 && sb.st_size < at && ftruncate(out_fd, at) < 0)
        err = ember_diag_set(d, -errno, dir, 0, "cannot extend the recording: %s", strerror(errno));
    if (!err && at >= 0 && lseek(out_fd, at, SEEK_SET) < 0)
        err = ember_diag_set(d, -errno, dir, 0, "cannot extend the recording: %s", strerror(errno));
    return err;
}
