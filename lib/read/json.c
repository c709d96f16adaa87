/*
 * json.c - yajl fed chunk by chunk, exact numbers (see json.h).
 *
 * yajl keeps what it needs of a token cut between two chunks, so chunks are
 * cut anywhere; a callback learns where it is from yajl's count of the bytes
 * it consumed of the current chunk, which gives the line when a message
 * needs one (counting is only done then).
 */
#include "read/json.h"
#include "read/read_impl.h"
#include "base/diag.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIXED_LIMIT ((ember_fixed)100000000000000000LL * 1000000000000LL) /* 10^29: 10^20 units */

uint64_t ember_json_line(const struct ember_json *j)
{
    if (!j->h || !j->c.len)
        return j->last_line ? j->last_line : j->c.first_line ? j->c.first_line : 1;
    size_t used = yajl_get_bytes_consumed(j->h);
    if (used > j->c.len)
        used = j->c.len;
    return j->c.first_line + ember_count_lines(j->c.data, used);
}

int ember_json_fail(struct ember_json *j, const char *fmt, ...)
{
    if (j->err)
        return 0;
    va_list ap;
    va_start(ap, fmt);
    j->err = ember_diag_vset(j->d, -EINVAL, j->file, ember_json_line(j), fmt, ap);
    va_end(ap);
    return 0;
}

int ember_json_error(struct ember_json *j, int err)
{
    if (err == -ERANGE)
        return ember_json_fail(j, "weights overflow a 64-bit total");
    if (!j->err)
        j->err = ember_diag_set(j->d, err, j->file, ember_json_line(j), "%s", strerror(-err));
    return 0;
}

void ember_json_warn(struct ember_json *j, struct ember_read_stats *st, const char *fmt, ...)
{
    st->skipped++;
    if (!j->o || !j->o->warn)
        return;
    struct ember_diag d;
    va_list ap;
    va_start(ap, fmt);
    ember_diag_vset(&d, 0, j->file, ember_json_line(j), fmt, ap);
    va_end(ap);
    j->o->warn(j->o->warn_ctx, &d);
}

/* yajl's own words for a syntax error, without its prefix and newline. */
static int syntax_error(struct ember_json *j, uint64_t line)
{
    unsigned char *m = yajl_get_error(j->h, 0, NULL, 0);
    const char *msg = m ? (const char *)m : "syntax error";
    const char *colon = strstr(msg, "error: ");
    if (colon)
        msg = colon + 7;
    size_t len = strcspn(msg, "\n");
    int err = ember_diag_set(j->d, -EINVAL, j->file, line, "invalid JSON: %.*s", (int)len, msg);
    if (m)
        yajl_free_error(j->h, m);
    return err;
}

static int feed(struct ember_json *j, bool first)
{
    const unsigned char *p = (const unsigned char *)j->c.data;
    size_t n = j->c.len;
    if (first && n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
        p += 3, n -= 3; /* a byte order mark */
    yajl_status s = yajl_parse(j->h, p, n);
    if (s == yajl_status_client_canceled)
        return j->err ? j->err : -EINVAL;
    if (s != yajl_status_ok) {
        size_t used =
            yajl_get_bytes_consumed(j->h) + (size_t)(p - (const unsigned char *)j->c.data);
        return syntax_error(j, j->c.first_line + ember_count_lines(j->c.data, used));
    }
    return 0;
}

/* yajl completes the parse by feeding a space: an error then, or open
 * containers, mean that the input ended inside a value (a cut number or
 * literal fails on that space; a cut string or container just stays open).
 * A callback's complaint about a cut value gives way to the cut. */
static int finish(struct ember_json *j, uint64_t last_line)
{
    yajl_status s = yajl_complete_parse(j->h);
    if (j->depth > 0 || s == yajl_status_error) {
        j->truncated = true;
        return 0;
    }
    if (s == yajl_status_client_canceled)
        return j->err ? j->err : -EINVAL;
    if (s != yajl_status_ok)
        return syntax_error(j, last_line);
    return 0;
}

int ember_json_truncated(struct ember_json *j, const char *inside)
{
    enum { SHOWN = 16 }; /* closers shown; deeper cuts give the depth */
    char closers[SHOWN + 1];
    if (j->depth == 0)
        return ember_format_truncated(j->d, j->file, j->last_line, inside,
                                      "the rest of the JSON value");
    if (j->depth > SHOWN)
        return ember_format_truncated(j->d, j->file, j->last_line, inside,
                                      "the rest of the JSON (%u arrays and objects are open)",
                                      j->depth);
    for (unsigned i = 0; i < j->depth; i++)
        closers[i] = j->maps >> (j->depth - 1 - i) & 1 ? '}' : ']';
    closers[j->depth] = '\0';
    return ember_format_truncated(j->d, j->file, j->last_line, inside,
                                  "the rest of the JSON, closed by \"%s\"", closers);
}

int ember_json_parse(struct ember_json *j, const yajl_callbacks *cb, void *ctx)
{
    j->h = yajl_alloc(cb, NULL, ctx);
    if (!j->h)
        return -ENOMEM;
    yajl_config(j->h, yajl_dont_validate_strings, 1); /* names are escaped by the writers */
    yajl_config(j->h, yajl_allow_partial_values, 1);  /* a cut is the reader's to judge */
    int err = 0;
    for (bool first = true; !err; first = false) {
        int got = ember_input_read_chunk(j->in, &j->c, EMBER_CUT_NONE, j->d);
        if (got <= 0) {
            err = got;
            break;
        }
        err = feed(j, first);
        if (!err && j->o && j->o->progress)
            j->o->progress(j->o->progress_ctx, j->in);
    }
    uint64_t last_line = ember_input_lines(j->in) + 1;
    j->c.len = 0;
    j->last_line = last_line;
    if (!err)
        err = finish(j, last_line);
    yajl_free(j->h);
    j->h = NULL;
    ember_chunk_release(&j->c);
    return err;
}

/* ---- numbers ------------------------------------------------------------------- */

/* 10^e for e from 0 to 38 (10^38 still fits). */
static ember_fixed pow10_fixed(int e)
{
    ember_fixed p = 1;
    while (e-- > 0)
        p *= 10;
    return p;
}

/* Scales m (0 or more) by 10^scale, rounding half up; false past the limit. */
static bool rescale(ember_fixed m, int scale, ember_fixed *v)
{
    if (scale < 0) {
        if (scale < -38) {
            *v = 0;
            return true;
        }
        ember_fixed p = pow10_fixed(-scale), q = m / p, r = m % p;
        if (r * 2 >= p)
            q++;
        *v = q;
        return true;
    }
    if (scale > 38 || (m && m > FIXED_LIMIT / pow10_fixed(scale)))
        return false;
    *v = m * pow10_fixed(scale);
    return true;
}

/* The common case, "123" or "-12.375" with at most 18 digits, without
 * 128-bit arithmetic until the end; false to take the general path. */
static bool plain_fixed(const char *s, size_t n, ember_fixed *v)
{
    size_t i = s[0] == '-';
    int64_t m = 0;
    int digits = 0, frac = -1;
    for (; i < n; i++) {
        if (s[i] >= '0' && s[i] <= '9') {
            if (++digits > 18)
                return false; /* the general path */
            m = m * 10 + (s[i] - '0');
        } else if (s[i] == '.' && frac < 0) {
            frac = digits;
        } else {
            return false;
        }
    }
    if (digits == 0 || (frac >= 0 && digits - frac > EMBER_JSON_DIGITS))
        return false;
    int scale = EMBER_JSON_DIGITS - (frac >= 0 ? digits - frac : 0);
    *v = (ember_fixed)m * pow10_fixed(scale);
    if (s[0] == '-')
        *v = -*v;
    return true;
}

bool ember_json_fixed(const char *s, size_t n, ember_fixed *v)
{
    if (n > 0 && n < 21 && plain_fixed(s, n, v))
        return true;
    size_t i = 0;
    bool neg = i < n && s[i] == '-', digits = false;
    i += neg;
    ember_fixed m = 0;
    int exp10 = 0;
    for (bool frac = false; i < n; i++) {
        if (s[i] == '.' && !frac) {
            frac = true;
            continue;
        }
        if (s[i] < '0' || s[i] > '9')
            break;
        digits = true;
        if (m < FIXED_LIMIT) {
            m = m * 10 + (s[i] - '0');
            exp10 -= frac;
        } else {
            exp10 += !frac; /* beyond 30 significant digits */
        }
    }
    if (!digits)
        return false;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        bool eneg = ++i < n && s[i] == '-';
        i += i < n && (s[i] == '-' || s[i] == '+');
        int e = 0;
        if (i == n)
            return false;
        for (; i < n && s[i] >= '0' && s[i] <= '9'; i++)
            e = e > 10000 ? e : e * 10 + (s[i] - '0');
        exp10 += eneg ? -e : e;
    }
    if (i != n || !rescale(m, exp10 + EMBER_JSON_DIGITS, v))
        return false;
    if (neg)
        *v = -*v;
    return true;
}

int ember_json_decimal(ember_fixed v, struct ember_decimal *out)
{
    unsigned digits = EMBER_JSON_DIGITS;
    while (digits > 0 && v % 10 == 0)
        v /= 10, digits--;
    while (digits > 0 && (v > INT64_MAX || v < -INT64_MAX)) {
        v = (v + (v < 0 ? -5 : 5)) / 10; /* more digits than an int64 holds */
        digits--;
    }
    if (v > INT64_MAX || v < -INT64_MAX)
        return -ERANGE;
    out->mant = (int64_t)v;
    out->digits = digits;
    return 0;
}

void ember_json_frame_name(char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n' || s[i] == '\r' || s[i] == '\0' || s[i] == EMBER_JSON_PLACEHOLDER)
            s[i] = ' ';
    }
}
