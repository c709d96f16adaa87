/*
 * fileio.c - whole extents read and written at an offset (see fileio.h):
 * the trace readers and the recorders' writers share them, so that every
 * short transfer and EINTR is retried the same way.
 */
#include "base/fileio.h"

#include <errno.h>
#include <unistd.h>

int ember_read_at(int fd, void *buf, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t r = pread(fd, (char *)buf + got, n - got, (off_t)(off + got));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -EIO;
        got += (size_t)r;
    }
    return 0;
}

int ember_write_at(int fd, const void *buf, size_t n, uint64_t off)
{
    size_t put = 0;
    while (put < n) {
        ssize_t w = pwrite(fd, (const char *)buf + put, n - put, (off_t)(off + put));
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        put += (size_t)w;
    }
    return 0;
}
