/*
 * pprof_write.h - what the parts of the pprof writer share (library-
 * internal): pprof_write.c writes the stacks, frames and mappings,
 * pprof_extra.c the samples' labels and the profile's meta (period, times,
 * comments, frame filters).
 *
 * The file is a sequence of small Profile messages (protobuf merges them),
 * gzipped as they are packed. String indices are known when a string is
 * taken: "" and the fixed strings first, then the frames' names in dense
 * order, then the extra strings in the order they were taken.
 */
#ifndef EMBER_WRITE_PPROF_WRITE_H
#define EMBER_WRITE_PPROF_WRITE_H

#include "write/write_impl.h"
#include "wire/pprof.h"

#include <zlib.h>

typedef Perftools__Profiles__Profile pb_profile;

enum { GZ_BUF = 1 << 16 };

/* protobuf-c's output buffer, compressing into the sink. */
struct gz_out {
    ProtobufCBuffer base;
    z_stream zs;
    const struct ember_sink *sink;
    int err;
    size_t len;
    uint8_t in[GZ_BUF];
    uint8_t out[GZ_BUF];
};

struct pprof_out {
    struct gz_out *gz;
    const struct ember_profile *p;
    struct ember_used_frames used;
    /* the strings before the frames' names: "", the values' types and
     * units, the comment */
    ProtobufCBinaryData fixed[2 * EMBER_MAX_VALUES + 2];
    size_t nfixed;
    uint64_t *ids; /* a sample's location ids */
    size_t idcap;
    /* Locations of frames with records: groups of frames, interned */
    uint32_t *grp; /* every group's frames, root-most first, end to end */
    size_t ngrp, gcap;
    struct group {
        uint32_t first, n;
    } * groups;
    size_t ngroups, gcount_cap;
    uint32_t *gslots; /* group index + 1; 0: empty */
    uint32_t gmask;
    /* strings after the names: files, system names, modules' paths and
     * build-ids, labels, the meta's */
    ProtobufCBinaryData *extra;
    size_t nextra, xcap;
    uint64_t *file_string; /* by dense frame: its file's string, 0 for none */
    uint64_t *mapping_id;  /* by module: its Mapping's id (the main one is 1) */
    /* when the reader named no main module: by module, the weight of the
     * stacks that run in it, and the last stack counted (stamp) */
    uint64_t *module_weight, *module_stamp, stamp;
    /* labels: the labelled parts by node, and each label set's strings
     * (key, str, unit per label) from set_first[set] - 1; 0: not taken */
    struct pprof_part {
        uint32_t node;
        size_t index;
    } * parts;
    size_t nparts;
    uint64_t *label_str;
    size_t nlabel_str, lcap;
    size_t *set_first;
};

void ember_pprof_pack(struct pprof_out *o, const pb_profile *part);
/* The index in string_table of an extra string (after the names): len
 * bytes of str, which must live until the strings are written. */
int ember_pprof_extra_string(struct pprof_out *o, const char *str, size_t len, uint64_t *index);

/* The labelled parts, indexed by node (before the walk). */
int ember_pprof_parts_index(struct pprof_out *o);
/* The samples of a stack ending at node, with ids[0, nids) its Location
 * ids and self its weights: one per labelled part of the node, then one of
 * the rest of the weight (when some is left). */
int ember_pprof_put_samples(struct pprof_out *o, uint32_t node, size_t nids, const int64_t *self);
/* The profile's meta and comments (once: a second time_nanos is an error
 * to Go's pprof). */
int ember_pprof_put_meta(struct pprof_out *o);
void ember_pprof_extra_release(struct pprof_out *o);

#endif
