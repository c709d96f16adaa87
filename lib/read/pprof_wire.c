/*
 * pprof_wire.c - walking protobuf's wire format with protobuf-c's generated
 * descriptors as the schema (see pprof_wire.h).
 *
 * A message is a sequence of (key, payload): key = field number << 3 | wire
 * type; varints are at most 10 bytes. The walk checks each known field's
 * wire type against its declared type (repeated numbers may be packed),
 * descends into embedded messages (three levels in profile.proto, so the
 * recursion is bounded by the schema, not the input), and stops at the
 * first problem with its byte offset and field path. When probing, the data
 * is a prefix of the file, so running out of bytes is not a problem.
 *
 * Truncation: a Profile is a sequence of fields up to the end of the data,
 * so a file cut between two of them cannot be told (the ids and string
 * indices of what was lost are then missing, which pprof.c reports). A
 * file cut inside a field of the Profile (its key, a varint, or a length-
 * delimited field that claims more bytes than remain) can: the explanation
 * then says "truncated input". The same inside an embedded message, whose
 * own length was whole, is a damaged message, not a cut.
 */
#include "read/pprof_wire.h"
#include "wire/protobuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

struct wire {
    const uint8_t *base; /* for byte offsets */
    bool strict;         /* probing: nothing but the Profile's fields */
    unsigned fields;     /* complete known fields of the Profile */
    char *why;
    size_t size;
    bool cut; /* why says the data ends inside a field of the Profile */
};

static bool fail(struct wire *w, const uint8_t *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool fail(struct wire *w, const uint8_t *at, const char *path, const char *fmt, ...)
{
    if (!w->why)
        return false;
    int n = snprintf(w->why, w->size, "at byte %zu, in %s: ", (size_t)(at - w->base), path);
    if (n > 0 && (size_t)n < w->size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(w->why + n, w->size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* The data ends inside the Profile's field at `at` (path): a cut file. */
static bool cut(struct wire *w, const uint8_t *at, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static bool cut(struct wire *w, const uint8_t *at, const char *path, const char *fmt, ...)
{
    if (!w->why)
        return false;
    w->cut = true;
    char what[200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    snprintf(w->why, w->size,
             "truncated input: expected %s (the input ends inside %s, from byte %zu)", what, path,
             (size_t)(at - w->base));
    return false;
}

static bool top(const ProtobufCMessageDescriptor *desc)
{
    return desc == &perftools__profiles__profile__descriptor;
}

static unsigned scalar_wire(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return EMBER_PROTOBUF_I64;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return EMBER_PROTOBUF_I32;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return EMBER_PROTOBUF_LEN;
    default:
        return EMBER_PROTOBUF_VARINT;
    }
}

/* The wire types field f may come in, as a bit mask: repeated numbers may
 * also be packed into one length-delimited run. */
static unsigned accepted(const ProtobufCFieldDescriptor *f)
{
    unsigned wt = scalar_wire(f->type);
    return 1u << wt | (f->label == PROTOBUF_C_LABEL_REPEATED ? 1u << EMBER_PROTOBUF_LEN : 0);
}

static const char *wire_name(unsigned wt)
{
    static const char *const names[] = {"varint",      "64-bit",    "length-delimited",
                                        "group start", "group end", "32-bit"};
    return wt < 6 ? names[wt] : "invalid";
}

static void expected(const ProtobufCFieldDescriptor *f, char *buf, size_t size)
{
    unsigned wt = scalar_wire(f->type);
    if (f->type == PROTOBUF_C_TYPE_MESSAGE)
        snprintf(buf, size, "an embedded %s message (length-delimited)",
                 ((const ProtobufCMessageDescriptor *)f->descriptor)->short_name);
    else if (wt == EMBER_PROTOBUF_LEN)
        snprintf(buf, size, "a length-delimited string");
    else
        snprintf(buf, size, "%s%s", wire_name(wt),
                 f->label == PROTOBUF_C_LABEL_REPEATED ? " or packed (length-delimited)" : "");
}

static bool check(struct wire *w, const uint8_t *p, const uint8_t *end,
                  const ProtobufCMessageDescriptor *desc, const char *path, bool partial);

/* A packed run of numbers: every element whole (but a cut last one when
 * probing a prefix). */
static bool check_packed(struct wire *w, const uint8_t *p, const uint8_t *end, unsigned wt,
                         const char *path, bool partial)
{
    size_t width = wt == EMBER_PROTOBUF_I64 ? 8 : 4;
    while (p < end) {
        const uint8_t *at = p;
        uint64_t v;
        enum ember_protobuf_status s = EMBER_PROTOBUF_OK;
        if (wt == EMBER_PROTOBUF_VARINT)
            s = ember_protobuf_varint_decode(&p, end, &v);
        else if ((size_t)(end - p) < width)
            s = EMBER_PROTOBUF_SHORT;
        else
            p += width;
        if (s == EMBER_PROTOBUF_SHORT)
            return partial || fail(w, at, path, "packed numbers end inside a number");
        if (s == EMBER_PROTOBUF_LONG)
            return fail(w, at, path, "a varint longer than 10 bytes");
    }
    return true;
}

/* The payload of a length-delimited field at p (its length already read):
 * an embedded message or packed numbers are checked inside. */
static bool check_len(struct wire *w, const uint8_t *at, const uint8_t *p, const uint8_t *end,
                      uint64_t len, const ProtobufCFieldDescriptor *f, const char *fpath,
                      bool partial, bool in_top)
{
    bool short_ = len > (uint64_t)(end - p);
    if (short_ && !partial && in_top)
        return cut(w, at, fpath, "the %llu bytes the field says it holds, of which %zu remain",
                   (unsigned long long)len, (size_t)(end - p));
    if (short_ && !partial)
        return fail(w, at, fpath, "the field says it holds %llu bytes but only %zu remain",
                    (unsigned long long)len, (size_t)(end - p));
    const uint8_t *stop = short_ ? end : p + len;
    if (f && f->type == PROTOBUF_C_TYPE_MESSAGE)
        return check(w, p, stop, f->descriptor, fpath, short_);
    if (f && scalar_wire(f->type) != EMBER_PROTOBUF_LEN)
        return check_packed(w, p, stop, scalar_wire(f->type), fpath, short_);
    return true;
}

enum field_status { FIELD_BAD, FIELD_WHOLE, FIELD_CUT };

/* Skips the payload of one field (key already read at `at`): whole, cut
 * by the end of a prefix (probing), or broken (w->why says why). */
static enum field_status check_field(struct wire *w, const uint8_t *at, const uint8_t **p,
                                     const uint8_t *end, unsigned wt,
                                     const ProtobufCFieldDescriptor *f, const char *fpath,
                                     bool partial, bool in_top)
{
    uint64_t v;
    enum ember_protobuf_status s = EMBER_PROTOBUF_OK;
    size_t width = wt == EMBER_PROTOBUF_I64 ? 8 : 4;
    switch (wt) {
    case EMBER_PROTOBUF_VARINT:
        s = ember_protobuf_varint_decode(p, end, &v);
        break;
    case EMBER_PROTOBUF_I64:
    case EMBER_PROTOBUF_I32:
        if ((size_t)(end - *p) < width)
            s = EMBER_PROTOBUF_SHORT;
        else
            *p += width;
        break;
    case EMBER_PROTOBUF_LEN:
        s = ember_protobuf_varint_decode(p, end, &v);
        if (s != EMBER_PROTOBUF_OK)
            break;
        if (!check_len(w, at, *p, end, v, f, fpath, partial, in_top))
            return FIELD_BAD;
        if (v > (uint64_t)(end - *p))
            return FIELD_CUT;
        *p += v;
        break;
    default:
        fail(w, at, fpath, "wire type %u (%s) is not used by pprof", wt, wire_name(wt));
        return FIELD_BAD;
    }
    if (s == EMBER_PROTOBUF_SHORT && partial)
        return FIELD_CUT;
    if (s == EMBER_PROTOBUF_SHORT && in_top)
        cut(w, at, fpath, "the rest of the field's %s",
            wt == EMBER_PROTOBUF_LEN ? "length" : "value");
    else if (s == EMBER_PROTOBUF_SHORT)
        fail(w, at, fpath, "the data ends inside the field");
    if (s == EMBER_PROTOBUF_LONG)
        fail(w, at, fpath, "a varint longer than 10 bytes");
    return s == EMBER_PROTOBUF_OK ? FIELD_WHOLE : FIELD_BAD;
}

static bool check(struct wire *w, const uint8_t *p, const uint8_t *end,
                  const ProtobufCMessageDescriptor *desc, const char *path, bool partial)
{
    unsigned counts[32] = {0}; /* elements seen per field, for paths */
    while (p < end) {
        const uint8_t *at = p;
        uint64_t key;
        enum ember_protobuf_status s = ember_protobuf_varint_decode(&p, end, &key);
        if (s == EMBER_PROTOBUF_SHORT && !partial && top(desc))
            return cut(w, at, path, "the rest of a field key");
        if (s == EMBER_PROTOBUF_SHORT)
            return partial || fail(w, at, path, "the data ends inside a field key");
        if (s == EMBER_PROTOBUF_LONG || key >> 3 == 0 || key >> 3 > 0x1fffffff)
            return fail(w, at, path, "not a field key (expected a field of %s)", desc->short_name);
        unsigned num = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(desc, num);
        char fpath[256], want[96];
        size_t fi = f ? (size_t)(f - desc->fields) : 0;
        if (f && f->label == PROTOBUF_C_LABEL_REPEATED)
            snprintf(fpath, sizeof(fpath), "%s.%s[%u]", path, f->name, fi < 32 ? counts[fi] : 0);
        else if (f)
            snprintf(fpath, sizeof(fpath), "%s.%s", path, f->name);
        else
            snprintf(fpath, sizeof(fpath), "%s.<field %u>", path, num);
        if (!f && w->strict)
            return fail(w, at, path, "field %u is not a field of %s", num, desc->short_name);
        if (f && !(accepted(f) & 1u << wt)) {
            expected(f, want, sizeof(want));
            return fail(w, at, fpath, "wire type %u (%s), expected %s", wt, wire_name(wt), want);
        }
        enum field_status fs = check_field(w, at, &p, end, wt, f, fpath, partial, top(desc));
        if (fs != FIELD_WHOLE)
            return fs == FIELD_CUT;
        if (f && fi < 32)
            counts[fi]++;
        if (f && desc == &perftools__profiles__profile__descriptor)
            w->fields++;
    }
    return true;
}

enum ember_probe ember_pprof_wire_probe(const char *data, size_t len)
{
    /* protobuf is binary (keys and lengths are small numbers): text that
     * happens to parse is not pprof */
    bool binary = false;
    for (size_t i = 0; i < len && i < 512 && !binary; i++) {
        unsigned char c = (unsigned char)data[i];
        binary = c < 0x20 && c != '\t' && c != '\n' && c != '\r';
    }
    if (!binary)
        return EMBER_PROBE_NO;
    struct wire w = {.base = (const uint8_t *)data, .strict = true};
    const uint8_t *p = (const uint8_t *)data;
    bool ok = check(&w, p, p + len, &perftools__profiles__profile__descriptor, "Profile", true);
    /* a damaged profile (good fields, then a bad one) is still pprof, so
     * that the reader can say what is wrong with it */
    if (ok && w.fields > 0)
        return EMBER_PROBE_YES;
    return w.fields >= 2 ? EMBER_PROBE_MAYBE : EMBER_PROBE_NO;
}

bool ember_pprof_wire_explain(const uint8_t *data, size_t len, char *why, size_t size)
{
    struct wire w = {.base = data, .why = why, .size = size};
    if (check(&w, data, data + len, &perftools__profiles__profile__descriptor, "Profile", false))
        snprintf(why, size,
                 "protobuf-c could not decode it as a perftools.profiles.Profile "
                 "message");
    return w.cut;
}
