/*
 * pprof_meta.h - what a pprof profile says beyond its stacks, read into
 * the model (library-internal, for pprof.c): the period, times, comments,
 * frame filters and doc_url of the Profile, and each Sample's labels.
 */
#ifndef EMBER_READ_PPROF_META_H
#define EMBER_READ_PPROF_META_H

#include "ember/model.h"
#include "profile.pb-c.h"
#include "base/diag.h"

/* The Profile's meta and comments (ember's own decimals comment, which
 * says how to read the values, is not kept: the writer says it again). */
int ember_pprof_read_meta(struct ember_profile *p, const Perftools__Profiles__Profile *pb,
                          const char *file, struct ember_diag *d);
/* Sample k's labels, when it has some: its values (vmap[i]: the profile's
 * value of sample type i; in units of 10^-digits) are node's part with
 * those labels. A bad string index is an error naming the sample. */
int ember_pprof_read_labels(struct ember_profile *p, const Perftools__Profiles__Profile *pb,
                            size_t k, uint32_t node, const unsigned *vmap, unsigned digits,
                            const char *file, struct ember_diag *d);

#endif
