/*
 * heap_archive.c - the recordings of `ember record --heap`'s processes
 * made one (ember/record.h: ember_heap_archive): the files libember-heap
 * wrote into a directory, back to back in the order their processes
 * started (the headers' start_mono_ns).
 *
 * Invariants: each file contributes exactly its header's size (4096 +
 * chunks * chunk_size), padded with zeros when the file is shorter (they
 * read as unclaimed chunks), so a reader finds the next process's header
 * right after; a file without a whole header (magic last: a process
 * killed as it began) or with a header that does not make sense is left
 * out; the headers are read once, so a process still writing (a
 * grandchild the command left running) contributes what its header said
 * then.
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

int ember_heap_archive(const char *dir, int out_fd, struct ember_heap_archive_stats *st,
                       struct ember_diag *d)
{
    memset(st, 0, sizeof(*st));
    struct heap_file *files = NULL;
    int n = list_files(dir, &files, d);
    int err = n < 0 ? n : 0;
    for (int i = 0; i < n && !err; i++) {
        char path[4096 + 64];
        snprintf(path, sizeof(path), "%s/%s", dir, files[i].name);
        int in = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        err = in < 0 ? -errno : copy_padded(in, out_fd, files[i].size);
        if (in >= 0)
            close(in);
        if (err)
            ember_diag_set(d, err, path, 0, "cannot copy it into the recording: %s",
                           strerror(-err));
        st->processes++;
        st->events += files[i].seq;
        st->bytes += files[i].size;
    }
    free(files);
    return err;
}
