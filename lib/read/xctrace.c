/*
 * xctrace.c - the XML of `xctrace export` for a Time Profiler table (what
 * inferno's collapse-xctrace reads), streamed through libxml2's
 * xmlTextReader:
 *
 *   <trace-query-result><node><schema .../>
 *     <row>... <weight id="9" fmt="1.00 ms">1000000</weight>
 *       <backtrace id="10">
 *         <frame id="11" name="leaf" addr="0x..."><binary .../></frame>
 *         <frame id="13" name="start" addr="0x..."/>
 *       </backtrace></row>
 *     <row>... <backtrace ref="10"/></row>
 *
 * The rules of inferno: each <row> of a <node> of <trace-query-result> is
 * one sample of its <backtrace>; a backtrace lists its <frame>s leaf
 * first; the frame's name is its name attribute (XML entities decoded),
 * Rust names losing their hash and escapes. xctrace defines each frame and
 * backtrace once, with id=, and later rows refer to it with ref=; so the
 * reader keeps two tables: frame id -> interned name, and backtrace id ->
 * the profile node of its stack (a row referring to a known backtrace adds
 * one sample to that node, without walking its frames again). A row
 * without a backtrace (xctrace writes <sentinel/>) is skipped. The
 * weight column is not read: like inferno, ember counts samples.
 *
 * Errors (file and line): XML that is not well-formed, a ref= to an id
 * never defined, a frame without a name, an id that is not a number, and a
 * document without <trace-query-result>.
 *
 * Truncation: an XML document ends by closing its root element, so a cut
 * anywhere before </trace-query-result>'s '>' is told: libxml2 then fails
 * at the input's end, with the root still open, and ember says the input
 * was cut, and inside which element (libxml2's own words for it vary with
 * where the cut falls: "Extra content", "expected '>'", "AttValue").
 *
 * Invariants: kinds[0..depth) are the element kinds of the open elements
 * (depth as libxml2 counts it); def[] holds the frames of the backtrace
 * being defined, leaf first. Memory is the two id tables, one chunk of
 * input and libxml2's reader state, whatever the input's size.
 */
#include "read/read_impl.h"
#include "base/chunk.h"
#include "read/perf/perf_tidy.h"
#include "base/u64map.h"
#include "base/diag.h"
#include "base/vec.h"

#include <errno.h>
#include <string.h>
#include <libxml/xmlreader.h>
#include <stdlib.h>

enum kind { OTHER, RESULT, NODE, ROW, BACKTRACE, FRAME };

struct xc_reader {
    struct ember_profile *p;
    struct ember_input *in;
    const struct ember_read_opts *o;
    struct ember_read_stats *st;
    const char *file;
    struct ember_diag *d;
    xmlTextReaderPtr xml;
    /* input, one chunk at a time */
    struct ember_chunk chunk;
    size_t pos;
    int io_err;
    bool eof, xml_err, seen_result, root_closed;
    uint64_t xml_err_line;
    /* open elements: kinds[0..open) */
    enum kind *kinds;
    size_t open, kcap;
    /* the row being read, and the backtrace being defined */
    bool row_has_bt;
    uint32_t row_node;
    uint64_t def_id;
    uint32_t *def;
    size_t ndef, dcap;
    char *buf;
    size_t bcap;
    struct ember_u64map frames, backtraces;
};

/* libxml2 pulls its input through this: the next bytes of the chunk, and
 * the next chunk when it is used up. */
static int pull(void *ctx, char *buf, int len)
{
    struct xc_reader *r = ctx;
    if (r->pos == r->chunk.len) {
        int got = ember_input_read_chunk(r->in, &r->chunk, EMBER_CUT_LINE, r->d);
        if (got < 0) {
            r->io_err = got;
            return -1;
        }
        if (got == 0) {
            r->eof = true;
            return 0;
        }
        r->pos = 0;
        if (r->o->progress)
            r->o->progress(r->o->progress_ctx, r->in);
    }
    size_t n = r->chunk.len - r->pos;
    if (n > (size_t)len)
        n = (size_t)len;
    memcpy(buf, r->chunk.data + r->pos, n);
    r->pos += n;
    return (int)n;
}

static int no_close(void *ctx)
{
    (void)ctx;
    return 0;
}

/* libxml2's complaints become the diagnostic (the first one: later ones
 * follow from it); the library prints nothing. */
static void on_xml_error(void *ctx, xmlErrorPtr e)
{
    struct xc_reader *r = ctx;
    if (r->xml_err || r->io_err || !e)
        return;
    r->xml_err = true;
    r->xml_err_line = e->line > 0 ? (uint64_t)e->line : 0;
    char msg[300];
    snprintf(msg, sizeof(msg), "%s", e->message ? e->message : "error");
    size_t n = strlen(msg);
    while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
        msg[--n] = '\0';
    ember_diag_set(r->d, -EINVAL, r->file, e->line > 0 ? (uint64_t)e->line : 0,
                   "not well-formed XML (expected `xctrace export` output): %s", msg);
}

/* The line of the element being read (the parser may be further on). */
static uint64_t line_of(struct xc_reader *r)
{
    xmlNodePtr node = xmlTextReaderCurrentNode(r->xml);
    long l = node ? xmlGetLineNo(node) : -1;
    if (l <= 0)
        l = xmlTextReaderGetParserLineNumber(r->xml);
    return l > 0 ? (uint64_t)l : 0;
}

/* The id= or ref= attribute: 1 if present (in *v), 0 if absent, or an
 * error. */
static int id_attr(struct xc_reader *r, const char *attr, uint64_t *v)
{
    xmlChar *a = xmlTextReaderGetAttribute(r->xml, BAD_CAST attr);
    if (!a)
        return 0;
    char *end;
    errno = 0;
    unsigned long long x = strtoull((const char *)a, &end, 10);
    bool ok = end != (char *)a && *end == '\0' && errno == 0 && a[0] >= '0' && a[0] <= '9';
    xmlFree(a);
    if (!ok)
        return ember_diag_set(r->d, -EINVAL, r->file, line_of(r), "%s= of <%s> is not a number",
                              attr, (const char *)xmlTextReaderConstName(r->xml));
    *v = x;
    return 1;
}

static int unknown_ref(struct xc_reader *r, const char *what, uint64_t id)
{
    return ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                          "<%s ref=\"%llu\"/> refers to a %s never defined with id=\"%llu\"", what,
                          (unsigned long long)id, what, (unsigned long long)id);
}

/* <frame id= name=> defines a frame; <frame ref=/> repeats one. */
static int on_frame(struct xc_reader *r)
{
    uint64_t id;
    uint32_t frame;
    int got = id_attr(r, "ref", &id);
    if (got < 0)
        return got;
    if (got) {
        if (!ember_u64map_get(&r->frames, id, &frame))
            return unknown_ref(r, "frame", id);
    } else {
        if ((got = id_attr(r, "id", &id)) <= 0)
            return got ? got
                       : ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                                        "a <frame> with neither id= nor ref=");
        xmlChar *name = xmlTextReaderGetAttribute(r->xml, BAD_CAST "name");
        if (!name)
            return ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                                  "<frame id=\"%llu\"> has no name=", (unsigned long long)id);
        size_t len = strlen((const char *)name);
        int err = EMBER_VEC_RESERVE(r->buf, r->bcap, len + 1);
        if (!err) {
            memcpy(r->buf, name, len + 1);
            len = ember_tidy_rust(r->buf, len);
            err = ember_profile_intern(r->p, r->buf, len, &frame);
        }
        xmlFree(name);
        if (!err)
            err = ember_u64map_put(&r->frames, id, frame);
        if (err)
            return err;
    }
    if (EMBER_VEC_RESERVE(r->def, r->dcap, r->ndef + 1) < 0)
        return -ENOMEM;
    r->def[r->ndef++] = frame;
    return 0;
}

/* The end of a backtrace's definition: its stack, from the root. */
static int end_backtrace(struct xc_reader *r)
{
    uint32_t node = EMBER_ROOT;
    for (size_t i = r->ndef; i-- > 0;) {
        int err = ember_profile_child(r->p, node, r->def[i], &node);
        if (err)
            return err;
    }
    r->row_has_bt = true;
    r->row_node = node;
    return ember_u64map_put(&r->backtraces, r->def_id, node);
}

/* <backtrace id=> starts a definition; <backtrace ref=/> uses one. */
static int on_backtrace(struct xc_reader *r, bool empty)
{
    uint64_t id;
    int got = id_attr(r, "ref", &id);
    if (got < 0)
        return got;
    if (got) {
        if (!ember_u64map_get(&r->backtraces, id, &r->row_node))
            return unknown_ref(r, "backtrace", id);
        r->row_has_bt = true;
        return 0;
    }
    if ((got = id_attr(r, "id", &id)) <= 0)
        return got ? got
                   : ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                                    "a <backtrace> with neither id= nor ref=");
    r->def_id = id;
    r->ndef = 0;
    return empty ? end_backtrace(r) : 0;
}

static int end_row(struct xc_reader *r)
{
    if (!r->row_has_bt) {
        r->st->skipped++;
        return 0;
    }
    r->row_has_bt = false;
    if (r->row_node == EMBER_ROOT) {
        r->st->skipped++; /* a backtrace without frames */
        return 0;
    }
    int err = ember_profile_add(r->p, r->row_node, 0, 1);
    if (err == -ERANGE)
        return ember_diag_set(r->d, err, r->file, line_of(r), "sample counts overflow");
    if (!err)
        r->st->samples++;
    return err;
}

/* What an element is, from its name and its parent's kind. */
static enum kind kind_of(enum kind parent, const char *name)
{
    static const struct {
        enum kind parent, kind;
        const char *name;
    } tree[] = {{OTHER, RESULT, "trace-query-result"},
                {RESULT, NODE, "node"},
                {NODE, ROW, "row"},
                {ROW, BACKTRACE, "backtrace"},
                {BACKTRACE, FRAME, "frame"}};
    for (size_t i = 0; i < sizeof(tree) / sizeof(tree[0]); i++)
        if (parent == tree[i].parent && strcmp(name, tree[i].name) == 0)
            return tree[i].kind;
    return OTHER;
}

static int on_start(struct xc_reader *r, size_t depth)
{
    enum kind parent = depth ? r->kinds[depth - 1] : OTHER;
    /* only the document element may be the result */
    enum kind k = depth == 0 || parent != OTHER
                      ? kind_of(parent, (const char *)xmlTextReaderConstName(r->xml))
                      : OTHER;
    bool empty = xmlTextReaderIsEmptyElement(r->xml) == 1;
    if (EMBER_VEC_RESERVE(r->kinds, r->kcap, depth + 1) < 0)
        return -ENOMEM;
    r->kinds[depth] = k;
    r->open = empty ? depth : depth + 1;
    r->root_closed |= empty && depth == 0;
    switch (k) {
    case RESULT:
        r->seen_result = true;
        return 0;
    case ROW:
        r->row_has_bt = false;
        return empty ? end_row(r) : 0;
    case BACKTRACE:
        return on_backtrace(r, empty);
    case FRAME:
        return on_frame(r);
    default:
        return 0;
    }
}

static int on_end(struct xc_reader *r, size_t depth)
{
    r->open = depth;
    r->root_closed |= depth == 0;
    if (depth >= r->kcap)
        return 0;
    switch (r->kinds[depth]) {
    case ROW:
        return end_row(r);
    case BACKTRACE:
        return end_backtrace(r);
    default:
        return 0;
    }
}

/* Did libxml2 fail because the input ended (the root still open, the
 * error on its last line)? Then say so, and inside which element. */
static bool cut_short(struct xc_reader *r)
{
    static const char *const names[] = {
        [RESULT] = "<trace-query-result>", [NODE] = "<node>",   [ROW] = "<row>",
        [BACKTRACE] = "<backtrace>",       [FRAME] = "<frame>",
    };
    if (!r->xml_err || !r->eof || r->root_closed || r->xml_err_line < ember_input_lines(r->in))
        return false;
    const char *inside = r->open ? "an element" : "the document, before its root element";
    for (size_t i = r->open; i-- > 0;) {
        if (r->kinds[i] != OTHER) {
            inside = names[r->kinds[i]];
            break;
        }
    }
    ember_format_truncated(r->d, r->file, r->xml_err_line, inside,
                           "the rest of the XML document, up to </trace-query-result>");
    return true;
}

static int parse(struct xc_reader *r)
{
    int ret, err = 0;
    while (!err && (ret = xmlTextReaderRead(r->xml)) == 1) {
        int depth = xmlTextReaderDepth(r->xml);
        if (depth < 0)
            continue;
        switch (xmlTextReaderNodeType(r->xml)) {
        case XML_READER_TYPE_ELEMENT:
            err = on_start(r, (size_t)depth);
            break;
        case XML_READER_TYPE_END_ELEMENT:
            err = on_end(r, (size_t)depth);
            break;
        default:
            break;
        }
    }
    if (err)
        return err;
    if (r->io_err)
        return r->io_err;
    if ((ret < 0 || r->xml_err) && cut_short(r))
        return -EINVAL;
    if (ret < 0 || r->xml_err)
        return r->xml_err
                   ? -EINVAL
                   : ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                                    "not well-formed XML (expected `xctrace export` output)");
    if (!r->seen_result)
        return ember_diag_set(r->d, -EINVAL, r->file, line_of(r),
                              "no <trace-query-result>: expected `xctrace export --xpath ...` "
                              "output of a Time Profiler table");
    return 0;
}

static int xctrace_read(struct ember_profile *p, struct ember_input *in,
                        const struct ember_read_opts *o, struct ember_read_stats *st,
                        struct ember_diag *d)
{
    struct xc_reader r = {.p = p, .in = in, .o = o, .st = st, .file = ember_input_name(in), .d = d};
    /* no network, no DTD, no entity expansion: the input is untrusted */
    if (ember_u64map_init(&r.frames) < 0)
        return -ENOMEM;
    if (ember_u64map_init(&r.backtraces) < 0) {
        ember_u64map_release(&r.frames);
        return -ENOMEM;
    }
    r.xml = xmlReaderForIO(pull, no_close, &r, NULL, NULL,
                           XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
    if (!r.xml) {
        ember_u64map_release(&r.frames);
        ember_u64map_release(&r.backtraces);
        return -ENOMEM;
    }
    xmlTextReaderSetStructuredErrorHandler(r.xml, on_xml_error, &r);
    int err = parse(&r);
    xmlFreeTextReader(r.xml);
    ember_chunk_release(&r.chunk);
    ember_u64map_release(&r.frames);
    ember_u64map_release(&r.backtraces);
    free(r.kinds);
    free(r.def);
    free(r.buf);
    return err;
}

/* An XML declaration, then a <trace-query-result> in the first bytes. */
static enum ember_probe xctrace_probe(const char *data, size_t len)
{
    size_t i = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        i = 3;
    while (i < len && (data[i] == ' ' || data[i] == '\n' || data[i] == '\r' || data[i] == '\t'))
        i++;
    if (len - i < 5 || memcmp(data + i, "<?xml", 5) != 0)
        return EMBER_PROBE_NO;
    return memmem(data, len, "<trace-query-result", 19) ? EMBER_PROBE_YES : EMBER_PROBE_NO;
}

const struct ember_format ember_format_xctrace = {
    .name = "xctrace",
    .description =
        "`xctrace export` XML of a Time Profiler table (inferno-collapse-xctrace's input)",
    .probe = xctrace_probe,
    .read = xctrace_read,
};
