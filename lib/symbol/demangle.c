/*
 * demangle.c - readable names (see demangle.h). C++ and Rust go to
 * libiberty's demangler (what c++filt uses: Itanium, Rust legacy and v0),
 * with the options of the tool each style matches; OCaml has no library,
 * its rules are short and written here. The transform's OCaml rules:
 *
 *   - "caml" + an uppercase letter starts a symbol (a leading '_' is Mach-O's);
 *   - parts are separated by "__" (OCaml 4, and unit names in 5), "." (5.x on
 *     Unix) or a '$' that does not start an escape (5.4 on macOS);
 *   - "$xx" is a character escaped in hex; OCaml escapes only printable
 *     characters outside [A-Za-z0-9_], which tells an escape from a '$'
 *     separator followed by a name;
 *   - the last part ends in "_NNN", a stamp: dropped, except for anonymous
 *     functions ("fun_188"), where it is what tells them apart;
 *   - an operator name is shown in parentheses, as OCaml writes it: "(^)".
 *
 * perf already demangles OCaml its own way (drops "caml", "__" -> ".",
 * decodes "$xx") but keeps the stamp: "Alloc.descend_744". Such names, a
 * capitalised module path and a stamped last part, lose the stamp too.
 *
 * addr2line -C: legacy Rust symbols are valid C++ manglings too
 * ("_ZN...17h<hash>E"): libiberty's own Rust recognizer tells them apart
 * before the C++ demangler would turn them into "path::h<hash>".
 */
#include "symbol/demangle.h"

#include <ctype.h>
#include <libiberty/demangle.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool is_upper(char c)
{
    return c >= 'A' && c <= 'Z';
}

static bool is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || is_upper(c) || (c >= '0' && c <= '9') || c == '_' || c == '\'';
}

static bool is_operator_char(char c)
{
    return c && strchr("!$%&*+-./:<=>?@^|~#", c) != NULL;
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* The escaped character at s ("$xx"), or -1 when s is not an escape. */
static int escape_at(const char *s, const char *end)
{
    if (end - s < 3 || s[0] != '$')
        return -1;
    int hi = hex_digit(s[1]), lo = hex_digit(s[2]);
    if (hi < 0 || lo < 0)
        return -1;
    int c = hi * 16 + lo; /* OCaml escapes what is not [A-Za-z0-9_] */
    return c > 0x20 && c < 0x7f && (c == '\'' || !is_ident((char)c)) ? c : -1;
}

/* Length of the last part without its "_NNN" stamp (kept for "fun_NNN"). */
static size_t without_stamp(const char *part, size_t n)
{
    size_t i = n;
    while (i > 0 && part[i - 1] >= '0' && part[i - 1] <= '9')
        i--;
    if (i == n || i < 2 || part[i - 1] != '_')
        return n;
    if (i - 1 == 3 && memcmp(part, "fun", 3) == 0)
        return n;
    return i - 1;
}

/* Appends the last part of an OCaml name: operators in parentheses. */
static char *put_last(char *o, const char *part, size_t n)
{
    n = without_stamp(part, n);
    bool op = n > 0;
    for (size_t i = 0; i < n; i++)
        op &= is_operator_char(part[i]);
    if (op)
        *o++ = '(';
    memcpy(o, part, n);
    o += n;
    if (op)
        *o++ = ')';
    return o;
}

/* Splits the symbol body into parts (decoding escapes into out), then
 * writes them joined by '.'. */
static size_t ocaml_raw(const char *s, const char *end, char *out)
{
    char parts[EMBER_DEMANGLE_MAX];
    size_t starts[256], nparts = 0, n = 0;
    starts[nparts++] = 0;
    while (s < end && n < sizeof(parts) - 1) {
        int c = escape_at(s, end);
        bool sep =
            (s[0] == '_' && end - s >= 2 && s[1] == '_') || s[0] == '.' || (s[0] == '$' && c < 0);
        if (sep) {
            if (nparts == sizeof(starts) / sizeof(starts[0]))
                return 0;
            s += s[0] == '_' ? 2 : 1;
            parts[n++] = '\0';
            starts[nparts++] = n;
        } else if (c >= 0) {
            parts[n++] = (char)c;
            s += 3;
        } else {
            parts[n++] = *s++;
        }
    }
    if (s < end)
        return 0;
    parts[n] = '\0';
    char *o = out;
    for (size_t i = 0; i < nparts; i++) {
        const char *p = parts + starts[i];
        size_t plen = (i + 1 < nparts ? starts[i + 1] - 1 : n) - starts[i];
        if (plen == 0)
            continue; /* "__" at an edge, or "$$" */
        if (o != out)
            *o++ = '.';
        if (i + 1 == nparts) {
            o = put_last(o, p, plen);
        } else {
            memcpy(o, p, plen);
            o += plen;
        }
    }
    *o = '\0';
    return (size_t)(o - out);
}

/* "Module.Path.name_NNN" as perf prints OCaml: the stamp dropped. */
static size_t ocaml_perf(const char *s, size_t len, char *out)
{
    const char *dot = memrchr(s, '.', len);
    if (!dot || !is_upper(s[0]) || dot == s + len - 1)
        return 0;
    for (const char *p = s; p < dot; p++) /* Module.Path */
        if (!is_ident(*p) && *p != '.')
            return 0;
    const char *last = dot + 1;
    size_t n = len - (size_t)(last - s), keep = without_stamp(last, n);
    if (keep == n)
        return 0; /* no stamp: not one of perf's OCaml names */
    for (size_t i = 0; i < keep; i++)
        if (!is_ident(last[i]) && !is_operator_char(last[i]))
            return 0;
    size_t head = (size_t)(last - s);
    memcpy(out, s, head);
    char *o = put_last(out + head, last, n);
    *o = '\0';
    return (size_t)(o - out);
}

/* C++ and Rust through libiberty, without parameter lists: a flame graph
 * shows functions, and FlameGraph drops the parameters too. */
static size_t native(const char *s, size_t len, char *out)
{
    char sym[EMBER_DEMANGLE_MAX];
    memcpy(sym, s, len);
    sym[len] = '\0';
    char *d = cplus_demangle(sym, DMGL_AUTO | DMGL_ANSI);
    size_t n = d ? strlen(d) : 0;
    if (n >= EMBER_DEMANGLE_MAX)
        n = 0;
    if (n)
        memcpy(out, d, n + 1);
    free(d);
    return n;
}

/* The transform's name into out (EMBER_DEMANGLE_MAX bytes): its length,
 * or 0 when it stays as it is. */
static size_t transform_name(const char *name, size_t len, char *out)
{
    if (len < 3 || len >= EMBER_DEMANGLE_MAX || memchr(name, '\0', len))
        return 0; /* no symbol holds a NUL */
    const char *s = name, *end = name + len;
    if (s[0] == '_' && s[1] == '_' && s[2] == 'Z') /* macOS' extra underscore */
        s++;
    if (s[0] == '_' && (s[1] == 'Z' || s[1] == 'R'))
        return native(s, (size_t)(end - s), out);
    if (s[0] == '_' && end - s > 5 && memcmp(s + 1, "caml", 4) == 0)
        s++;
    if (end - s > 5 && memcmp(s, "caml", 4) == 0 && is_upper(s[4]))
        return ocaml_raw(s + 4, end, out);
    return ocaml_perf(name, len, out);
}

/* perf's ocaml_demangle_sym: "camlStdlib__List.map_123" is
 * "Stdlib.List.map_123" ("caml" dropped, "__" as '.', "$xx" a byte). */
static char *perf_ocaml(const char *s)
{
    if (strncmp(s, "caml", 4) != 0 || !isupper((unsigned char)s[4]))
        return NULL;
    size_t len = strlen(s), j = 0;
    char *out = malloc(len + 1);
    if (!out)
        return NULL;
    for (size_t i = 4; i < len;) {
        if (s[i] == '_' && s[i + 1] == '_') {
            out[j++] = '.';
            i += 2;
        } else if (s[i] == '$' && isxdigit((unsigned char)s[i + 1]) &&
                   isxdigit((unsigned char)s[i + 2])) {
            /* perf takes uppercase digits too: | 0x20 lowers them */
            out[j++] = (char)(hex_digit(s[i + 1] | 0x20) << 4 | hex_digit(s[i + 2] | 0x20));
            i += 3;
        } else {
            out[j++] = s[i++];
        }
    }
    out[j] = '\0';
    return out;
}

static bool is_rust(const char *name)
{
    char *rust = rust_demangle(name, 0);
    bool found = rust != NULL;
    free(rust);
    return found;
}

/* The NUL-terminated sym as the tool of style demangles it. */
static char *tool_name(const char *sym, enum ember_demangle_style style)
{
    if (style == EMBER_DEMANGLE_ADDR2LINE)
        return is_rust(sym) ? NULL : cplus_demangle_v3(sym, DMGL_PARAMS | DMGL_ANSI);
    char *d = cplus_demangle(sym, DMGL_NO_OPTS);
    return d ? d : perf_ocaml(sym);
}

char *ember_demangle(const char *name, size_t len, enum ember_demangle_style style)
{
    if (style == EMBER_DEMANGLE_TRANSFORM) {
        char out[EMBER_DEMANGLE_MAX];
        return transform_name(name, len, out) ? strdup(out) : NULL;
    }
    char *sym = strndup(name, len);
    char *d = sym ? tool_name(sym, style) : NULL;
    free(sym);
    return d;
}
