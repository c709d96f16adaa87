/*
 * log.c - the packet log that `ember record` writes while it drains a
 * running program's rings: the ring file's header, site table and ring
 * descriptors (written last, when they are final, at the offsets the ring
 * file uses), then the packets from data_offset on, each as {u32 ring,
 * u32 bytes} + the packet padded to 8 bytes, in the order they were read.
 * The reader (reader.c, flag EMBER_RING_LOG) reads both kinds of file.
 */
#include "ember/tracefile.h"
#include "format.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ember_trace_log {
    struct ember_follow *f;
    int fd;
    uint64_t data_offset, off, packets;
};

int ember_trace_log_new(struct ember_trace_log **out, struct ember_follow *f, int fd)
{
    struct ember_trace_log *l = calloc(1, sizeof(*l));
    if (!l)
        return -ENOMEM;
    size_t used;
    const struct ember_ring_header *h = ember_follow_header(f, &used);
    uint64_t tables = h->rings_offset + (uint64_t)h->ring_count * EMBER_RING_DESC_SIZE;
    if (h->strings_offset + h->strings_size > tables)
        tables = h->strings_offset + h->strings_size;
    l->f = f;
    l->fd = fd;
    l->data_offset = l->off = (tables + 4095) / 4096 * 4096;
    *out = l;
    return 0;
}

static int put(struct ember_trace_log *l, const void *p, size_t n)
{
    while (n) {
        ssize_t w = pwrite(l->fd, p, n, (off_t)l->off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return w < 0 ? -errno : -EIO;
        p = (const char *)p + w;
        n -= (size_t)w;
        l->off += (uint64_t)w;
    }
    return 0;
}

int ember_trace_log_packet(void *ctx, unsigned ring, const void *packet, size_t size)
{
    struct ember_trace_log *l = ctx;
    static const char zeros[8];
    uint32_t hdr[2] = {ring, (uint32_t)((size + 7) / 8 * 8)};
    int err = put(l, hdr, sizeof(hdr));
    if (!err)
        err = put(l, packet, size);
    if (!err)
        err = put(l, zeros, hdr[1] - size);
    l->packets += !err;
    return err;
}

int ember_trace_log_finish(struct ember_trace_log *l)
{
    size_t used;
    const struct ember_ring_header *live = ember_follow_header(l->f, &used);
    struct ember_ring_header h = *live;
    unsigned rings = ember_follow_ring_count(l->f);
    h.flags |= EMBER_RING_LOG;
    h.ring_count = rings ? rings : 1;
    h.rings_claimed = rings;
    h.data_offset = l->data_offset;
    h.strings_used = (uint32_t)used;
    h.consumer = 0;
    char page[EMBER_RING_HEADER_SIZE] = {0};
    memcpy(page, &h, sizeof(h));
    const char *map = (const char *)live;
    uint64_t end = l->off;
    l->off = 0;
    int err = put(l, page, sizeof(page));
    l->off = h.strings_offset;
    if (!err)
        err = put(l, map + h.strings_offset, used);
    l->off = h.rings_offset;
    if (!err)
        err = put(l, map + h.rings_offset, (size_t)rings * EMBER_RING_DESC_SIZE);
    l->off = end;
    return err;
}

uint64_t ember_trace_log_packets(const struct ember_trace_log *l)
{
    return l->packets;
}

void ember_trace_log_free(struct ember_trace_log *l)
{
    free(l);
}
