/*
 * trace_compact.c - rewrites a trace file (ring file or packet log) with
 * its site table cut to what is used and the unclaimed rings dropped, so
 * that a real trace of a few threads makes a fuzzing seed of tens of
 * kilobytes instead of a megabyte of zeros. The content is unchanged:
 * `ember trace dump` prints the same lines for both files.
 *
 * An OCaml runtime_events file is rewritten with only its rings up to the
 * last one used (max_domains cut to them) and its user-event name table cut
 * after the last name: OCaml lays the file out sparse, and fuzz_trace reads
 * such a seed also zero-extended to the size its header gives, where it
 * dumps as the original.
 *
 * usage: trace_compact IN OUT
 */
#include "wire/ring_format.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) < 0)
        return NULL;
    long n = ftell(f);
    char *buf = n > 0 ? malloc((size_t)n) : NULL;
    rewind(f);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    *size = (size_t)n;
    return buf;
}

/* OCaml's header: 8 words, version 1, the ring headers at byte 64. */
static bool is_ocaml(const char *in, size_t size)
{
    uint64_t w[8];
    if (size < sizeof(w))
        return false;
    memcpy(w, in, sizeof(w));
    return w[0] == 1 && w[5] == 64;
}

static int compact_ocaml(const char *in, size_t size, const char *path)
{
    uint64_t h[8], ring[2];
    memcpy(h, in, sizeof(h));
    uint64_t used = 0, names_end = 0;
    for (uint64_t i = 0; i < h[1] && h[5] + (i + 1) * h[2] <= size; i++) {
        memcpy(ring, in + h[5] + i * h[2], sizeof(ring));
        used = ring[1] ? i + 1 : used;
    }
    for (uint64_t b = h[7]; b < size; b++)
        names_end = in[b] ? b + 1 - h[7] : names_end;
    uint64_t out[8] = {1, used, h[2], h[3], h[4], 64, 64 + used * h[2], 0};
    out[7] = out[6] + used * h[3];
    if (h[6] + used * h[3] > size || h[7] + names_end > size) {
        fprintf(stderr, "trace_compact: offsets out of range\n");
        return 1;
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        return 1;
    fwrite(out, 1, sizeof(out), f);
    fwrite(in + h[5], 1, used * h[2], f);
    fwrite(in + h[6], 1, used * h[3], f);
    fwrite(in + h[7], 1, names_end, f);
    return fclose(f) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    size_t size;
    char *in = argc == 3 ? slurp(argv[1], &size) : NULL;
    if (in && is_ocaml(in, size)) {
        int rc = compact_ocaml(in, size, argv[2]);
        free(in);
        return rc;
    }
    if (!in || size < EMBER_RING_HEADER_SIZE) {
        fprintf(stderr, "usage: trace_compact IN OUT (IN: a trace file)\n");
        return 2;
    }
    struct ember_ring_header h;
    memcpy(&h, in, sizeof(h));
    uint64_t strings = (h.strings_used + 7) / 8 * 8;
    uint64_t rings = h.rings_claimed < h.ring_count ? h.rings_claimed : h.ring_count;
    uint64_t data_size = size - h.data_offset;
    if (!(h.flags & EMBER_RING_LOG)) /* a ring file: only the claimed rings */
        data_size = rings * h.packets_per_ring * h.packet_size;
    if (h.strings_offset + strings > size || h.rings_offset + rings * EMBER_RING_DESC_SIZE > size ||
        h.data_offset + data_size > size) {
        fprintf(stderr, "trace_compact: %s: offsets out of range\n", argv[1]);
        return 1;
    }
    struct ember_ring_header out = h;
    out.ring_count = out.rings_claimed = (uint32_t)(rings ? rings : 1);
    out.strings_offset = EMBER_RING_HEADER_SIZE;
    out.strings_size = strings;
    out.rings_offset = out.strings_offset + strings;
    out.data_offset = out.rings_offset + out.ring_count * EMBER_RING_DESC_SIZE;
    FILE *f = fopen(argv[2], "wb");
    char page[EMBER_RING_HEADER_SIZE] = {0};
    memcpy(page, &out, sizeof(out));
    char *descs = calloc(out.ring_count, EMBER_RING_DESC_SIZE);
    if (!f || !descs)
        return 1;
    memcpy(descs, in + h.rings_offset, rings * EMBER_RING_DESC_SIZE);
    fwrite(page, 1, sizeof(page), f);
    fwrite(in + h.strings_offset, 1, strings, f);
    fwrite(descs, 1, out.ring_count * EMBER_RING_DESC_SIZE, f);
    fwrite(in + h.data_offset, 1, data_size, f);
    free(descs);
    free(in);
    return fclose(f) == 0 ? 0 : 1;
}
