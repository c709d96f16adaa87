/*
 * fileio.h - reading and writing whole extents of a file at an offset
 * (pread, pwrite), retried through short transfers and EINTR.
 */
#ifndef EMBER_BASE_FILEIO_H
#define EMBER_BASE_FILEIO_H

#include <stddef.h>
#include <stdint.h>

/* Reads n bytes at off: 0, or -EIO (short: the file ends before). */
int ember_read_at(int fd, void *buf, size_t n, uint64_t off);
/* Writes n bytes at off: 0, or a negative errno (-EIO if nothing was
 * written and no error said why). */
int ember_write_at(int fd, const void *buf, size_t n, uint64_t off);

#endif
