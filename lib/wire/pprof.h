/*
 * pprof.h - pprof's profile.proto, for ember's writer and reader of it
 * (library-internal): the messages as protobuf-c generates them from
 * proto/profile.proto, and what ember adds to them.
 */
#ifndef EMBER_WIRE_PPROF_H
#define EMBER_WIRE_PPROF_H

#include "profile.pb-c.h"

/* pprof values are integers: ember writes weights with N decimals in units
 * of 10^-N, and says so with this comment followed by the digit N. */
#define EMBER_PPROF_DECIMALS_COMMENT "ember: values are in units of 10^-"

#endif
