/*
 * perf_tidy.c - frame-name rules of stackcollapse-perf.pl, and where ember
 * departs from them on purpose:
 * - FlameGraph cuts a name at its first '(' (keeping only "(anonymous
 *   namespace)" and Go receivers), which mangles C++ templates and lambdas:
 *   "std::_Function_handler<void (int), F>::_M_invoke" became
 *   "std::_Function_handler<void ". We cut only the top-level parameter list,
 *   as inferno does, and also keep operator names ("operator()", "operator<").
 * - Rust hashes are stripped, as inferno does.
 * - Kernel modules (".ko", versioned "vmlinux-5.4...") and jitdump's
 *   "jitted-PID-N.so" are recognised, as inferno does.
 */
#include "read/perf/perf_tidy.h"

#include <string.h>

static bool is_ident(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '$';
}

static bool starts_with(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && memcmp(s, lit, n) == 0;
}

/* If s[i..] is a C++ operator name, returns the index just after it. */
static size_t skip_operator(const char *s, size_t len, size_t i)
{
    if (!starts_with(s + i, len - i, "operator") || (i > 0 && is_ident((unsigned char)s[i - 1])))
        return i;
    size_t j = i + 8;
    if (j < len && is_ident((unsigned char)s[j]))
        return i; /* "operators", or a conversion "operator int" handled as text */
    while (j < len && s[j] == ' ')
        j++;
    if (starts_with(s + j, len - j, "()"))
        return j + 2;
    if (starts_with(s + j, len - j, "[]"))
        return j + 2;
    size_t k = j;
    while (k < len && strchr("<>=!+-*/%^&|~,", s[k]) && k - j < 3)
        k++;
    return k > j ? k : i;
}

size_t ember_tidy_generic(char *s, size_t len)
{
    int depth = 0;
    size_t cut = len;
    for (size_t i = 0; i < len && cut == len;) {
        size_t op = skip_operator(s, len, i);
        if (op != i) {
            i = op;
            continue;
        }
        switch (s[i]) {
        case '<':
        case '{':
        case '[':
            depth++;
            break;
        case '>':
        case '}':
        case ']':
        case ')':
            if (depth > 0)
                depth--;
            break;
        case '(':
            if (depth > 0 || (i > 0 && s[i - 1] == '.')) {
                depth++; /* inside a template, or a Go receiver "pkg.(*T)" */
            } else if (starts_with(s + i, len - i, "(anonymous namespace)")) {
                i += strlen("(anonymous namespace)");
                continue;
            } else {
                cut = i;
            }
            break;
        }
        i++;
    }
    size_t o = 0;
    for (size_t i = 0; i < cut; i++)
        if (s[i] != '"' && s[i] != '\'')
            s[o++] = s[i];
    s[o] = '\0';
    return o;
}

size_t ember_tidy_java(char *s, size_t len)
{
    if (len > 0 && s[0] == 'L' && memchr(s, '/', len)) {
        memmove(s, s + 1, len); /* includes the NUL */
        return len - 1;
    }
    return len;
}

static bool is_hex(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/* Rust's legacy escapes, as rustc-demangle decodes them. */
static const struct {
    const char *esc;
    char c;
} rust_escapes[] = {
    {"$SP$", '@'},   {"$BP$", '*'},  {"$RF$", '&'},  {"$LT$", '<'},  {"$GT$", '>'},
    {"$LP$", '('},   {"$RP$", ')'},  {"$C$", ','},   {"$u7e$", '~'}, {"$u20$", ' '},
    {"$u27$", '\''}, {"$u3d$", '='}, {"$u5b$", '['}, {"$u5d$", ']'}, {"$u7b$", '{'},
    {"$u7d$", '}'},  {"$u3b$", ';'}, {"$u2b$", '+'}, {"$u22$", '"'}, {"$u21$", '!'},
};

size_t ember_tidy_rust(char *s, size_t len)
{
    /* Only names ending in "::h" + 16 lowercase hex digits. */
    if (len < 20 || memcmp(s + len - 19, "::h", 3) != 0)
        return len;
    for (size_t i = len - 16; i < len; i++)
        if (!is_hex((unsigned char)s[i]))
            return len;
    len -= 19;
    size_t i = 0, o = 0;
    if (len >= 2 && s[0] == '_' && s[1] == '$')
        i = 1;
    while (i < len) {
        if (s[i] == '.' && i + 1 < len && s[i + 1] == '.') {
            s[o++] = ':';
            s[o++] = ':';
            i += 2;
            continue;
        }
        if (s[i] == '$') {
            size_t k;
            for (k = 0; k < sizeof(rust_escapes) / sizeof(rust_escapes[0]); k++) {
                size_t n = strlen(rust_escapes[k].esc);
                if (len - i >= n && memcmp(s + i, rust_escapes[k].esc, n) == 0) {
                    s[o++] = rust_escapes[k].c;
                    i += n;
                    break;
                }
            }
            if (k < sizeof(rust_escapes) / sizeof(rust_escapes[0]))
                continue;
        }
        s[o++] = s[i++];
    }
    s[o] = '\0';
    return o;
}

bool ember_module_is_kernel(const char *mod, size_t len)
{
    if (memmem(mod, len, "unknown", 7))
        return false;
    if (len > 0 && mod[0] == '[')
        return true;
    if (len >= 3 && memcmp(mod + len - 3, ".ko", 3) == 0)
        return true;
    /* ".../vmlinux" or a versioned ".../vmlinux-5.4.14-cloudflare" */
    const char *v = NULL;
    for (const char *p = mod; (p = memmem(p, len - (size_t)(p - mod), "vmlinux", 7)); p++)
        v = p;
    if (!v)
        return false;
    for (const char *p = v + 7; p < mod + len; p++)
        if (!is_ident((unsigned char)*p) && *p != '.' && *p != '-')
            return false;
    return true;
}

bool ember_module_is_jit(const char *mod, size_t len)
{
    /* perf map files "/tmp/perf-PID.map" (FlameGraph's rule) */
    for (const char *p = mod; (p = memmem(p, len - (size_t)(p - mod), "/tmp/perf-", 10)); p++) {
        const char *q = p + 10, *end = mod + len;
        const char *d = q;
        while (d < end && *d >= '0' && *d <= '9')
            d++;
        if (d > q && end - d >= 4 && memcmp(d, ".map", 4) == 0)
            return true;
    }
    /* jitdump's "jitted-PID-N.so" */
    const char *base = memrchr(mod, '/', len);
    base = base ? base + 1 : mod;
    size_t blen = len - (size_t)(base - mod);
    return blen > 10 && memcmp(base, "jitted-", 7) == 0 && memcmp(base + blen - 3, ".so", 3) == 0;
}
