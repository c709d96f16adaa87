/*
 * ring_log.c - the packet log that `ember trace record` writes while it drains a
 * running program's rings: the ring file's header, site table and ring
 * descriptors (written last, when they are final, at the offsets the ring
 * file uses), then the packets from data_offset on, each as {u32 ring,
 * u32 bytes} + the packet padded to 8 bytes, in the order they were read.
 */
#include "tracefile/ring_log.h"
#include "base/fileio.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct ember_log {
    int fd;
    struct ember_ring_header h; /* as the file's was when the log began */
    uint64_t data_offset, off;
};

int ember_log_new(struct ember_log **out, const struct ember_ring_header *h, int fd)
{
    struct ember_log *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    uint64_t tables = h->rings_offset + (uint64_t)h->ring_count * EMBER_RING_DESC_SIZE;
    if (h->strings_offset + h->strings_size > tables)
        tables = h->strings_offset + h->strings_size;
    l->fd = fd;
    l->h = *h;
    l->data_offset = l->off = (tables + 4095) / 4096 * 4096;
    *out = l;
    return 0;
}

static int put(struct ember_log *l, const void *p, size_t n)
{
    int err = ember_write_at(l->fd, p, n, l->off);
    l->off += err ? 0 : n;
    return err;
}

int ember_log_packet(struct ember_log *l, unsigned ring, const void *packet, size_t size)
{
    static const char zeros[8];
    uint32_t hdr[2] = {ring, (uint32_t)((size + 7) / 8 * 8)};
    int err = put(l, hdr, sizeof(hdr));
    if (!err)
        err = put(l, packet, size);
    if (!err)
        err = put(l, zeros, hdr[1] - size);
    return err;
}

int ember_log_finish(struct ember_log *l, const char *map, uint32_t strings_used, unsigned rings)
{
    struct ember_ring_header h;
    memcpy(&h, map, sizeof(h));
    h.flags |= EMBER_RING_LOG;
    h.ring_count = rings ? rings : 1;
    h.rings_claimed = rings;
    h.data_offset = l->data_offset;
    h.strings_used = strings_used;
    h.consumer = 0;
    char page[EMBER_RING_HEADER_SIZE] = {0};
    memcpy(page, &h, sizeof(h));
    uint64_t end = l->off;
    l->off = 0;
    int err = put(l, page, sizeof(page));
    l->off = h.strings_offset;
    if (!err)
        err = put(l, map + h.strings_offset, strings_used);
    l->off = h.rings_offset;
    if (!err)
        err = put(l, map + h.rings_offset, (size_t)rings * EMBER_RING_DESC_SIZE);
    l->off = end;
    return err;
}

void ember_log_free(struct ember_log *l)
{
    free(l);
}
