/*
 * ring_log.h - writing the packet log that `ember trace record` makes of a
 * running program's ember rings (library-internal; the reader is
 * lib/tracefile/ember_rings.c, flag EMBER_RING_LOG).
 */
#ifndef EMBER_TRACEFILE_RING_LOG_H
#define EMBER_TRACEFILE_RING_LOG_H

#include "wire/ring_format.h"

#include <stddef.h>
#include <stdint.h>

struct ember_log;

/* A log into fd (which must allow pwrite) of the ring file whose live
 * header is h: packets go after the tables h lays out. */
int ember_log_new(struct ember_log **l, const struct ember_ring_header *h, int fd);
int ember_log_packet(struct ember_log *l, unsigned ring, const void *packet, size_t size);
/* Writes the header and tables, copied from the ring file's first bytes
 * (map): the log is complete. rings: how many rings it has packets of. */
int ember_log_finish(struct ember_log *l, const char *map, uint32_t strings_used, unsigned rings);
void ember_log_free(struct ember_log *l);

#endif
