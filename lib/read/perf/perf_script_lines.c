/*
 * perf_script_lines.c - the syntax of `perf script`'s lines: event lines
 * ("comm pid/tid [cpu] time: period event:"), frame lines ("pc symbol
 * (module)"), and the probes that tell the format by them.
 *
 * Invariants: these functions only look at the text they are given (no
 * parser state), and on success point into it.
 */
#include "read/perf/perf_names.h"
#include "read/perf/perf_script_impl.h"

#include <string.h>

/* ---- event lines ------------------------------------------------------ */

/* "comm pid[/tid] ..." where comm may hold spaces: the comm ends at the first
 * whitespace run followed by digits, an optional "/digits", and whitespace. */
bool ember_perf_event_head(const char *s, size_t n, struct event_head *ev)
{
    if (n == 0 || is_ws((unsigned char)s[0]))
        return false;
    for (size_t i = 1; i < n; i++) {
        if (!is_ws((unsigned char)s[i]) || is_ws((unsigned char)s[i - 1]))
            continue;
        size_t j = i;
        while (j < n && is_ws((unsigned char)s[j]))
            j++;
        size_t k = j;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
        if (k == j)
            continue;
        size_t m = k, t0 = 0;
        if (m < n && s[m] == '/') {
            t0 = m + 1;
            m = t0;
            while (m < n && is_digit((unsigned char)s[m]))
                m++;
            if (m == t0)
                continue;
        }
        if (m >= n || !is_ws((unsigned char)s[m]))
            continue;
        ev->comm = s;
        ev->comm_len = i;
        if (t0) {
            ev->pid = s + j, ev->pid_len = k - j;
            ev->tid = s + t0, ev->tid_len = m - t0;
        } else {
            ev->pid = "?", ev->pid_len = 1;
            ev->tid = s + j, ev->tid_len = k - j;
        }
        while (m < n && is_ws((unsigned char)s[m]))
            m++;
        ev->rest = s + m;
        ev->rest_len = n - m;
        return true;
    }
    return false;
}

/* What follows "comm pid" on a line at column 0 that names no event as
 * the script reads one: an event line still, if it is empty, a "[cpu]",
 * holds perf's timestamp ("123.456789:") or ends with an event ("EVENT:"). The script takes any
 * "comm pid ..." line; that made a /proc/PID/maps line ("5570-5584 r--p 00000000 fe:00 ...") a
 * sample. */
bool ember_perf_bare_event_rest(const char *s, size_t n)
{
    size_t e = n;
    while (e > 0 && is_ws((unsigned char)s[e - 1]))
        e--;
    if (e > 1 && s[e - 1] == ':') /* "cpu-clock:" (perf script -F comm,pid,event) */
        return true;
    size_t i = 0;
    if (i < n && s[i] == '[') {
        while (i < n && s[i] != ']')
            i++;
        i++;
        while (i < n && is_ws((unsigned char)s[i]))
            i++;
    }
    if (i >= n)
        return true;
    size_t a = i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    if (i == a || i >= n || s[i] != '.')
        return false;
    size_t b = ++i;
    while (i < n && is_digit((unsigned char)s[i]))
        i++;
    return i > b && i < n && s[i] == ':';
}

/* The script's ":\s*(\d+)*\s+(\S+):\s*$": the line ends with "EVENT:", after
 * whitespace, after an optional period, after a ':'. */
bool ember_perf_event_name(const char *s, size_t n, const char **ev, size_t *evlen, int64_t *period)
{
    while (n > 0 && is_ws((unsigned char)s[n - 1]))
        n--;
    size_t a = n;
    while (a > 0 && !is_ws((unsigned char)s[a - 1]))
        a--;
    if (n - a < 2 || s[n - 1] != ':')
        return false;
    size_t i = a;
    while (i > 0 && is_ws((unsigned char)s[i - 1]))
        i--;
    if (i == a)
        return false;
    size_t k = i;
    while (k > 0 && is_digit((unsigned char)s[k - 1]))
        k--;
    size_t m = k;
    while (m > 0 && is_ws((unsigned char)s[m - 1]))
        m--;
    if (m == 0 || s[m - 1] != ':')
        return false;
    *ev = s + a;
    *evlen = n - 1 - a;
    int64_t v = 0;
    for (size_t x = k; x < i; x++)
        v = v > (INT64_MAX - 9) / 10 ? INT64_MAX : v * 10 + (s[x] - '0');
    *period = v; /* 0: none */
    return true;
}

/* ---- frame lines ------------------------------------------------------ */

/* The '(' that the ')' at s[r] closes, when it follows a space; 0 if
 * none. A module may hold parentheses: "(/memfd:jit (deleted))". */
static size_t balanced_open(const char *s, size_t r)
{
    int depth = 0;
    for (size_t i = r + 1; i-- > 0;) {
        depth += s[i] == ')' ? 1 : s[i] == '(' ? -1 : 0;
        if (depth == 0)
            return i > 0 && s[i - 1] == ' ' ? i : 0;
    }
    return 0;
}

/* The script's "^\s*(\w+)\s*(.+) \((.*)\)": the module is in the
 * parentheses that close at the last ')', the symbol is what lies between
 * the address and the module (at least one character). Where the script's
 * backtracking takes the last " (" instead, a module with parentheses of
 * its own ("(/memfd:x (deleted))") lost its name; when the parentheses do
 * not balance, the last " (" it is. */
bool ember_perf_frame_at(const char *s, size_t n, size_t i, size_t j, struct frame_line *f)
{
    if (j == i)
        return false;
    size_t k = j;
    while (k < n && is_ws((unsigned char)s[k]))
        k++;
    const char *rp = s[n - 1] == ')' ? s + n - 1 : memrchr(s, ')', n);
    if (!rp)
        return false;
    size_t r = (size_t)(rp - s);
    /* only a module that ends in ')' needs counting: "(x (deleted))" */
    size_t q = r > 0 && s[r - 1] == ')' ? balanced_open(s, r) : 0;
    if (q == 0) {
        q = r;
        for (;;) {
            const char *lp = memrchr(s, '(', q);
            if (!lp)
                return false;
            q = (size_t)(lp - s);
            if (q > 0 && s[q - 1] == ' ')
                break;
        }
    }
    q--; /* the space of " (" */
    size_t x = k < q ? k : q - 1;
    if (q == 0 || x < i + 1)
        return false;
    f->pc = s + i;
    f->pc_len = (j < x ? j : x) - i;
    f->func = s + x;
    f->func_len = q - x;
    f->mod = s + q + 2;
    f->mod_len = r - q - 2;
    return true;
}

/* The script's "^\s*(\w+)": the address is [*i, *j). */
void ember_perf_scan_address(const char *s, size_t n, size_t *i, size_t *j)
{
    size_t a = 0;
    while (a < n && is_ws((unsigned char)s[a]))
        a++;
    size_t b = a;
    while (b < n && is_word((unsigned char)s[b]))
        b++;
    *i = a;
    *j = b;
}

bool ember_perf_parse_frame(const char *s, size_t n, struct frame_line *f)
{
    size_t i, j;
    ember_perf_scan_address(s, n, &i, &j);
    return ember_perf_frame_at(s, n, i, j, f);
}
/* perf right-aligns short comms when it prints no call chains: an indented
 * line may be an event line, unless its first word is an address. */
static size_t event_indent(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n && is_ws((unsigned char)s[i]))
        i++;
    if (i == 0)
        return 0;
    size_t j = i;
    while (j < n && is_lower_hex((unsigned char)s[j]))
        j++;
    return j == n || is_ws((unsigned char)s[j]) ? n : i;
}

/* An event line without a period/event suffix may carry a frame:
 * "comm pid time: 1 cycles:u:  ffff sym (mod)". */
const char *ember_perf_combined_split(const struct event_head *ev)
{
    const char *s = ev->rest, *end = ev->rest + ev->rest_len;
    while (s < end) {
        const char *tok = s;
        while (s < end && !is_ws((unsigned char)*s))
            s++;
        size_t tl = (size_t)(s - tok);
        while (s < end && is_ws((unsigned char)*s))
            s++;
        if (tl < 2 || tok[tl - 1] != ':')
            continue;
        bool stamp = true;
        for (size_t k = 0; k + 1 < tl; k++)
            stamp = stamp && (is_digit((unsigned char)tok[k]) || tok[k] == '.');
        if (stamp)
            continue;
        /* tok is the event; the rest must be "HEX sym (mod)" */
        const char *x = s;
        while (x < end && ((*x >= '0' && *x <= '9') || (*x >= 'a' && *x <= 'f')))
            x++;
        struct frame_line f;
        if (x == s || x == end || !is_ws((unsigned char)*x) ||
            !ember_perf_parse_frame(s, (size_t)(end - s), &f))
            return NULL;
        return s;
    }
    return NULL;
}
static bool is_combined(const struct event_head *ev)
{
    return ember_perf_combined_split(ev) != NULL;
}

/* Is this line an event line (as on_line decides)? A ';' in the first
 * word is a folded stack ("a;b;c 1 3", difffolded's two counts, would
 * otherwise pass for "comm pid time"). */
bool ember_perf_probe_event(const char *s, size_t n)
{
    const char *semi = memchr(s, ';', n), *sp = memchr(s, ' ', n);
    if (semi && (!sp || semi < sp))
        return false;
    struct event_head ev;
    const char *e;
    size_t el;
    int64_t per;
    size_t lead = event_indent(s, n);
    if (lead >= n || !ember_perf_event_head(s + lead, n - lead, &ev))
        return false;
    return ember_perf_event_name(s, n, &e, &el, &per) || is_combined(&ev) ||
           (lead == 0 && ember_perf_bare_event_rest(ev.rest, ev.rest_len));
}

bool ember_perf_probe_frame(const char *s, size_t n)
{
    struct frame_line f;
    return ember_perf_parse_frame(s, n, &f);
}
