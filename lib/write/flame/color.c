/*
 * color.c - frame colours exactly as flamegraph.pl computes them.
 *
 * By default a colour is a function of the name: flamegraph.pl seeds Perl's
 * rand() with the sum of the name's code points and draws once. Perl's
 * rand() is drand48, so we step the same 48-bit generator. --hash uses
 * namehash(), which weights the first three characters; --random draws.
 */
#include "write/flame/color.h"
#include "base/utf8.h"

#include <stdlib.h>
#include <string.h>

static double drand48_step(unsigned long long *x)
{
    *x = (*x * 0x5DEECE66DULL + 0xB) & ((1ULL << 48) - 1);
    return (double)*x / (double)(1ULL << 48);
}

double ember_name_rand(const char *name, size_t len)
{
    unsigned sum = 0;
    for (size_t i = 0; i < len;)
        sum += ember_utf8_next(name, len, &i);
    unsigned long long x = ((unsigned long long)sum << 16) + 0x330E;
    return drand48_step(&x);
}

/* namehash over code points cp[0..n) */
static double namehash_cps(const unsigned *cp, size_t n)
{
    double vector = 0, weight = 1, max = 1;
    unsigned mod = 10;
    for (size_t k = 0; k < n; k++) {
        unsigned i = cp[k] % mod;
        vector += ((double)i / (mod++ - 1)) * weight;
        max += weight;
        weight *= 0.70;
        if (mod > 12)
            break;
    }
    return 1 - vector / max;
}

/* The first three code points of the name (or of its reverse) after
 * flamegraph.pl drops a module prefix: s/.(.*?)`// removes everything from
 * the first character through the first '`' after it. */
static size_t hash_prefix(const char *name, size_t len, unsigned *cp, bool reverse)
{
    size_t n = 0, m = 0;
    if (!reverse) {
        const char *tick = len > 1 ? memchr(name + 1, '`', len - 1) : NULL;
        for (size_t i = tick ? (size_t)(tick - name) + 1 : 0; i < len && m < 3;)
            cp[m++] = ember_utf8_next(name, len, &i);
        return m;
    }
    unsigned *all = malloc((len + 1) * sizeof(*all));
    if (!all)
        return 0;
    for (size_t i = 0; i < len;)
        all[n++] = ember_utf8_next(name, len, &i);
    size_t skip = 0; /* in the reversed name */
    for (size_t k = 1; k < n; k++) {
        if (all[n - 1 - k] == '`') {
            skip = k + 1;
            break;
        }
    }
    for (size_t k = skip; k < n && m < 3; k++)
        cp[m++] = all[n - 1 - k];
    free(all);
    return m;
}

double ember_namehash(const char *name, size_t len)
{
    unsigned cp[3];
    return namehash_cps(cp, hash_prefix(name, len, cp, false));
}

static double namehash_reversed(const char *name, size_t len)
{
    unsigned cp[3];
    return namehash_cps(cp, hash_prefix(name, len, cp, true));
}

static bool ends_with(const char *s, size_t len, const char *lit)
{
    size_t n = strlen(lit);
    return len >= n && memcmp(s + len - n, lit, n) == 0;
}

static bool contains(const char *s, size_t len, const char *lit)
{
    return memmem(s, len, lit, strlen(lit)) != NULL;
}

/* Whether a frame is of kind k, by its record or, for names read as text
 * (folded stacks), by FlameGraph's annotation at its end. */
static bool is_kind(enum ember_frame_kind kind, enum ember_frame_kind k, const char *s, size_t len)
{
    return kind == k || ends_with(s, len, ember_frame_kind_suffix(k));
}

/* An off-CPU mark: by its kind, or by its name in folded text. */
static bool is_offcpu(const char *s, size_t len, enum ember_frame_kind kind)
{
    return kind == EMBER_FRAME_OFFCPU || (len == 9 && memcmp(s, "[off-cpu]", 9) == 0) ||
           (len == 11 && memcmp(s, "[preempted]", 11) == 0);
}

static const char *java_type(const char *s, size_t len, enum ember_frame_kind kind)
{
    static const char *const pkgs[] = {"java/", "javax/", "jdk/", "net/",
                                       "org/",  "com/",   "io/",  "sun/"};
    if (is_kind(kind, EMBER_FRAME_JIT, s, len))
        return "green";
    if (is_kind(kind, EMBER_FRAME_INLINED, s, len))
        return "aqua";
    const char *t = len > 0 && s[0] == 'L' ? s + 1 : s;
    size_t tl = len - (size_t)(t - s);
    for (size_t k = 0; k < sizeof(pkgs) / sizeof(pkgs[0]); k++)
        if (tl >= strlen(pkgs[k]) && memcmp(t, pkgs[k], strlen(pkgs[k])) == 0)
            return "green";
    if (contains(s, len, ":::"))
        return "green";
    if (contains(s, len, "::"))
        return "yellow";
    if (is_kind(kind, EMBER_FRAME_KERNEL, s, len))
        return "orange";
    return "red";
}

static const char *perl_type(const char *s, size_t len, enum ember_frame_kind kind)
{
    if (contains(s, len, "::"))
        return "yellow";
    if (contains(s, len, "Perl") || contains(s, len, ".pl"))
        return "green";
    if (is_kind(kind, EMBER_FRAME_KERNEL, s, len))
        return "orange";
    return "red";
}

static const char *js_type(const char *s, size_t len, enum ember_frame_kind kind)
{
    if (is_kind(kind, EMBER_FRAME_JIT, s, len))
        return memchr(s, '/', len) ? "green" : "aqua";
    if (contains(s, len, "::"))
        return "yellow";
    const char *slash = memchr(s, '/', len);
    if (slash && contains(slash, len - (size_t)(slash - s), ".js"))
        return "green";
    if (memchr(s, ':', len))
        return "aqua";
    if (len == 1 && s[0] == ' ')
        return "green";
    /* flamegraph.pl: an annotation anywhere in the name */
    if (kind == EMBER_FRAME_KERNEL || contains(s, len, "_[k]"))
        return "orange";
    return "red";
}

static const char *const palettes[] = {"hot",  "mem",  "io",     "wakeup", "chain",
                                       "java", "js",   "perl",   "red",    "green",
                                       "blue", "aqua", "yellow", "purple", "orange"};

bool ember_palette_known(const char *palette)
{
    for (size_t k = 0; k < sizeof(palettes) / sizeof(palettes[0]); k++)
        if (strcmp(palette, palettes[k]) == 0)
            return true;
    return false;
}

struct ember_rgb ember_color(const char *type, enum ember_color_mode mode, const char *name,
                             size_t len, enum ember_frame_kind kind, unsigned long long *rng)
{
    double v1, v2, v3;
    if (mode == EMBER_COLOR_HASH) {
        v1 = ember_namehash(name, len);
        v2 = v3 = namehash_reversed(name, len);
    } else if (mode == EMBER_COLOR_RANDOM) {
        v1 = drand48_step(rng);
        v2 = drand48_step(rng);
        v3 = drand48_step(rng);
    } else {
        v1 = v2 = v3 = ember_name_rand(name, len);
    }
    if (is_offcpu(name, len, kind))
        type = "io"; /* time away from the CPU, in FlameGraph's off-CPU blue */
    if (strcmp(type, "hot") == 0)
        return (struct ember_rgb){205 + (int)(50 * v3), (int)(230 * v1), (int)(55 * v2)};
    if (strcmp(type, "mem") == 0)
        return (struct ember_rgb){0, 190 + (int)(50 * v2), (int)(210 * v1)};
    if (strcmp(type, "io") == 0) {
        int r = 80 + (int)(60 * v1);
        return (struct ember_rgb){r, r, 190 + (int)(55 * v2)};
    }
    if (strcmp(type, "java") == 0)
        type = java_type(name, len, kind);
    else if (strcmp(type, "perl") == 0)
        type = perl_type(name, len, kind);
    else if (strcmp(type, "js") == 0)
        type = js_type(name, len, kind);
    else if (strcmp(type, "wakeup") == 0)
        type = "aqua";
    else if (strcmp(type, "chain") == 0)
        type = contains(name, len, "_[w]") ? "aqua" : "blue";

    if (strcmp(type, "red") == 0) {
        int x = 50 + (int)(80 * v1);
        return (struct ember_rgb){200 + (int)(55 * v1), x, x};
    }
    if (strcmp(type, "green") == 0) {
        int x = 50 + (int)(60 * v1);
        return (struct ember_rgb){x, 200 + (int)(55 * v1), x};
    }
    if (strcmp(type, "blue") == 0) {
        int x = 80 + (int)(60 * v1);
        return (struct ember_rgb){x, x, 205 + (int)(50 * v1)};
    }
    if (strcmp(type, "yellow") == 0) {
        int x = 175 + (int)(55 * v1);
        return (struct ember_rgb){x, x, 50 + (int)(20 * v1)};
    }
    if (strcmp(type, "purple") == 0) {
        int x = 190 + (int)(65 * v1);
        return (struct ember_rgb){x, 80 + (int)(60 * v1), x};
    }
    if (strcmp(type, "aqua") == 0)
        return (struct ember_rgb){50 + (int)(60 * v1), 165 + (int)(55 * v1), 165 + (int)(55 * v1)};
    if (strcmp(type, "orange") == 0)
        return (struct ember_rgb){190 + (int)(65 * v1), 90 + (int)(65 * v1), 0};
    return (struct ember_rgb){0, 0, 0};
}

struct ember_rgb ember_color_scale(double value, double max)
{
    struct ember_rgb c = {255, 255, 255};
    if (value > 0)
        c.g = c.b = (int)(210 * (max - value) / max);
    else if (value < 0)
        c.r = c.g = (int)(210 * (max + value) / max);
    return c;
}
