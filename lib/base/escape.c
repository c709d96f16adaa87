/*
 * escape.c - JSON and XML escaping (see escape.h). Bytes that need nothing
 * are copied in runs, so plain text costs one write.
 */
#include "base/escape.h"
#include "base/utf8.h"

#define REPLACEMENT "\xef\xbf\xbd" /* U+FFFD in UTF-8 */

/* Writes the JSON escape of c (below 0x20, '"' or '\\'). */
static void json_escape(struct ember_writer *w, unsigned char c, unsigned flags)
{
    static const char hex[] = "0123456789abcdef";
    char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
    if (c == '"' || c == '\\') {
        e[1] = (char)c;
        ember_writer_put(w, e, 2);
    } else if ((flags & EMBER_JSON_SHORT) && (c == '\n' || c == '\t' || c == '\r')) {
        e[1] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        ember_writer_put(w, e, 2);
    } else {
        ember_writer_put(w, e, 6);
    }
}

void ember_escape_json(struct ember_writer *w, const char *s, size_t n, unsigned flags)
{
    size_t run = 0; /* start of the bytes copied as they are */
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        unsigned cp;
        int len = c < 0x80 ? 1 : ember_utf8_decode(s + i, n - i, &cp, false);
        if (len > 0 && (c >= 0x20 && c != '"' && c != '\\')) {
            i += (size_t)len;
            continue;
        }
        ember_writer_put(w, s + run, i - run);
        if (len > 0) {
            json_escape(w, c, flags);
            i++;
        } else {
            ember_writer_put(w, REPLACEMENT, 3);
            i += flags & EMBER_JSON_FFFD_BYTES ? 1 : (size_t)-len;
        }
        run = i;
    }
    ember_writer_put(w, s + run, n - run);
}

/* What XML writes for ASCII byte c, or NULL for c itself. */
static const char *xml_entity(unsigned char c, bool quot)
{
    if (c == '&')
        return "&amp;";
    if (c == '<')
        return "&lt;";
    if (c == '>')
        return "&gt;";
    if (c == '"' && quot)
        return "&quot;";
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7f)
        return REPLACEMENT; /* XML 1.0 has no such characters */
    return NULL;
}

void ember_escape_xml(struct ember_writer *w, const char *s, size_t n, bool quot)
{
    size_t run = 0;
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        unsigned cp;
        int len = c < 0x80 ? 1 : ember_utf8_decode(s + i, n - i, &cp, false);
        const char *rep = len < 0 ? REPLACEMENT : c < 0x80 ? xml_entity(c, quot) : NULL;
        size_t adv = len < 0 ? 1 : (size_t)len;
        if (rep) {
            ember_writer_put(w, s + run, i - run);
            ember_writer_puts(w, rep);
            run = i + adv;
        }
        i += adv;
    }
    ember_writer_put(w, s + run, n - run);
}
