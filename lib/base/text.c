/*
 * text.c - control characters found and escaped (see text.h).
 *
 * Looking for them is on the path of every new stack of `diff` on folded
 * input, so whole words are tested at once: a word holds a byte below
 * 0x20, a DEL or a 0xc2 (which may start U+0080..U+009F) when one of the
 * classic "has a byte less than / equal to" bit tricks says so. They never
 * miss one; a 0xc2 that starts another character is checked bytewise.
 */
#include "base/text.h"
#include "ember/base.h"

#include <stdint.h>
#include <string.h>

#define ONES  0x0101010101010101ull
#define HIGHS 0x8080808080808080ull

/* Whether word w may hold a control character's first byte. */
static bool word_suspect(uint64_t w)
{
    uint64_t below = (w - ONES * 0x20) & ~w & HIGHS;
    uint64_t del = w ^ (ONES * 0x7f), c2 = w ^ (ONES * 0xc2);
    return (below | ((del - ONES) & ~del & HIGHS) | ((c2 - ONES) & ~c2 & HIGHS)) != 0;
}

bool ember_text_has_ctl(const char *s, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, s + i, 8);
        if (!word_suspect(w))
            continue;
        for (size_t k = i; k < i + 8; k++)
            if (ember_text_ctl_len(s + k, n - k))
                return true;
    }
    for (; i < n; i++)
        if (ember_text_ctl_len(s + i, n - i))
            return true;
    return false;
}

size_t ember_text_escape_into(const char *s, size_t n, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        size_t k = ember_text_ctl_len(s + i, n - i);
        if (!k) {
            buf[o++] = s[i++];
            continue;
        }
        for (size_t end = i + k; i < end; i++) {
            unsigned char c = (unsigned char)s[i];
            memcpy(buf + o, (char[4]){'\\', 'x', hex[c >> 4], hex[c & 15]}, 4);
            o += 4;
        }
    }
    return o;
}

size_t ember_text_escape(const char *s, size_t n, char *buf, size_t cap)
{
    size_t need = 0, used = 0;
    for (size_t i = 0; i < n;) {
        size_t k = ember_text_ctl_len(s + i, n - i), len = k ? EMBER_TEXT_ESCAPE * k : 1;
        if (used == need && used + len < cap) { /* whole escapes only */
            if (k)
                used += ember_text_escape_into(s + i, k, buf + used);
            else
                buf[used++] = s[i];
        }
        need += len;
        i += k ? k : 1;
    }
    if (cap)
        buf[used] = '\0';
    return need;
}
