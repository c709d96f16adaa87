/*
 * escape.h - text escaped for JSON strings and for XML (library-internal):
 * the one escaper of each, for every JSON and SVG writer.
 *
 * Both write valid UTF-8 whatever the bytes: valid sequences (utf8.h,
 * strict) are copied, the rest becomes U+FFFD. JSON escapes '"', '\\' and
 * the bytes below 0x20; XML escapes & < > (and '"' in attributes) and
 * replaces the control characters XML 1.0 forbids with U+FFFD.
 */
#ifndef EMBER_BASE_ESCAPE_H
#define EMBER_BASE_ESCAPE_H

#include "base/writer.h"

#include <stdbool.h>
#include <stddef.h>

/* How a JSON writer spells what it escapes (its tests fix its bytes). */
enum {
    EMBER_JSON_SHORT = 1,      /* \n, \t and \r, not \u000a... */
    EMBER_JSON_FFFD_BYTES = 2, /* one U+FFFD per invalid byte, not per maximal subpart */
};

/* n bytes of s as the inside of a JSON string (no quotes), spelled as
 * flags (EMBER_JSON_*) say. */
void ember_escape_json(struct ember_writer *w, const char *s, size_t n, unsigned flags);

/* n bytes of s as XML text, '"' escaped too when quot (attributes); each
 * invalid byte becomes one U+FFFD. */
void ember_escape_xml(struct ember_writer *w, const char *s, size_t n, bool quot);

#endif
