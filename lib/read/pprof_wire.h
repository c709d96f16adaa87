/*
 * pprof_wire.h - pprof's protobuf wire format beyond what protobuf-c decodes
 * (library-internal): probing the first bytes, explaining why bytes do not
 * decode, and the comment ember writes when weights have decimals.
 */
#ifndef EMBER_READ_PPROF_WIRE_H
#define EMBER_READ_PPROF_WIRE_H

#include "ember/read.h"
#include "wire/pprof.h"

#include <stdbool.h>
#include <stdint.h>

/* Yes when the first bytes are binary and parse as the start of a Profile
 * message: only its fields, each with its wire type. */
enum ember_probe ember_pprof_wire_probe(const char *data, size_t len);

/* Says (into why) where and why data, which protobuf-c refused, is not a
 * Profile message: a wrong wire type, a bad varint... Returns true when
 * the data was cut inside a field of the Profile: why then is a whole
 * "truncated input: expected ... (the input ends inside ...)". */
bool ember_pprof_wire_explain(const uint8_t *data, size_t len, char *why, size_t size);

#endif
