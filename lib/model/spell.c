/*
 * spell.c - a frame as FlameGraph's scripts name it: the one place where a
 * frame record becomes the text that folded stacks, flame graphs and
 * reports show ("func_[k]", "func:file.c:12").
 *
 * Readers keep what they know in the record (the kind, the file and line)
 * and say with kind_in_name and place_in_name whether FlameGraph's spelling
 * shows it; the name itself never carries an annotation a reader added, and
 * keeps its bytes as read: only the folded spelling (put_name) makes a name
 * fit to be one piece of a line of text, the one place where that is done.
 * There each ';' (which separates the frames of a folded stack) is ':', as
 * FlameGraph's stackcollapse scripts write it, and each byte of a control
 * character (a newline would split the line, an ESC drive the terminal)
 * "\xNN" (base/text.h). The spelling is not undone when a folded stack is
 * read back: a name spelled once is spelled the same again.
 */
#include "ember/model.h"
#include "model/profile_impl.h"
#include "base/text.h"

#include <stdio.h>
#include <string.h>

const char *ember_frame_kind_suffix(enum ember_frame_kind kind)
{
    switch (kind) {
    case EMBER_FRAME_KERNEL:
        return "_[k]";
    case EMBER_FRAME_JIT:
        return "_[j]";
    case EMBER_FRAME_INLINED:
        return "_[i]";
    default:
        return "";
    }
}

/* Appends s[0..n) to buf at *at, as far as cap - 1 allows; counts it all. */
static void put(char *buf, size_t cap, size_t *at, const char *s, size_t n)
{
    if (*at < cap) {
        size_t room = cap - 1 - *at;
        memcpy(buf + *at, s, n < room ? n : room);
    }
    *at += n;
}

/* A name as a piece of a folded stack: each ';' (the frames' separator)
 * as ':', each byte of a control character as "\xNN". */
static void put_name(char *buf, size_t cap, size_t *at, const char *s, size_t n, bool folded)
{
    size_t run = 0; /* the bytes from run on are kept */
    for (size_t i = 0; folded && i < n;) {
        size_t k = s[i] == ';' ? 1 : ember_text_ctl_len(s + i, n - i);
        if (!k) {
            i++;
            continue;
        }
        put(buf, cap, at, s + run, i - run);
        char esc[2 * EMBER_TEXT_ESCAPE];
        put(buf, cap, at, s[i] == ';' ? ":" : esc,
            s[i] == ';' ? 1 : ember_text_escape_into(s + i, k, esc));
        i += k;
        run = i;
    }
    put(buf, cap, at, s + run, n - run);
}

bool ember_name_unfit_folded(const char *s, size_t n)
{
    return n && (memchr(s, ';', n) || ember_text_has_ctl(s, n));
}

/* A process or thread spelled as perf's scripts do: "comm-PID/TID". */
static bool is_task(const struct ember_frame *f)
{
    return f->kind_in_name && (f->kind == EMBER_FRAME_PROCESS || f->kind == EMBER_FRAME_THREAD);
}

bool ember_frame_spelled(const struct ember_frame *f)
{
    return (f->kind_in_name && ember_frame_kind_suffix(f->kind)[0]) ||
           (f->place_in_name && f->file) || is_task(f);
}

bool ember_frame_spelled_folded(const struct ember_frame *f)
{
    return ember_frame_spelled(f) || ember_name_unfit_folded(f->name, f->name_len);
}

/* "comm-PID/TID": the command's spaces as '_' (the script's tr/ /_/). */
static void put_task(const struct ember_frame *f, char *buf, size_t cap, size_t *at, bool folded)
{
    const char *s = f->name, *end = f->name + f->name_len, *sp;
    while (s < end && (sp = memchr(s, ' ', (size_t)(end - s))) != NULL) {
        put_name(buf, cap, at, s, (size_t)(sp - s), folded);
        put(buf, cap, at, "_", 1);
        s = sp + 1;
    }
    put_name(buf, cap, at, s, (size_t)(end - s), folded);
    char ids[48];
    int n = f->pid < 0 ? snprintf(ids, sizeof(ids), "-?")
                       : snprintf(ids, sizeof(ids), "-%lld", (long long)f->pid);
    if (f->kind == EMBER_FRAME_THREAD && f->tid >= 0)
        n += snprintf(ids + n, sizeof(ids) - (size_t)n, "/%lld", (long long)f->tid);
    put(buf, cap, at, ids, (size_t)n);
}

static size_t spell(const struct ember_frame *f, char *buf, size_t cap, bool folded)
{
    size_t at = 0;
    if (is_task(f)) {
        put_task(f, buf, cap, &at, folded);
        if (cap)
            buf[at < cap ? at : cap - 1] = '\0';
        return at;
    }
    put_name(buf, cap, &at, f->name, f->name_len, folded);
    if (f->kind_in_name) {
        const char *sfx = ember_frame_kind_suffix(f->kind);
        put(buf, cap, &at, sfx, strlen(sfx));
    }
    if (f->place_in_name && f->file) {
        const char *base = memrchr(f->file, '/', f->file_len);
        base = base ? base + 1 : f->file;
        char line[16];
        int ln = snprintf(line, sizeof(line), ":%u", (unsigned)f->line);
        put(buf, cap, &at, ":", 1);
        put_name(buf, cap, &at, base, f->file_len - (size_t)(base - f->file), folded);
        put(buf, cap, &at, line, (size_t)ln);
    }
    if (cap)
        buf[at < cap ? at : cap - 1] = '\0';
    return at;
}

size_t ember_frame_spell(const struct ember_frame *f, char *buf, size_t cap)
{
    return spell(f, buf, cap, false);
}

size_t ember_frame_spell_folded(const struct ember_frame *f, char *buf, size_t cap)
{
    return spell(f, buf, cap, true);
}

static bool is_hex(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

size_t ember_name_strip_hex(const char *s, size_t n, char *buf)
{
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (i + 2 < n && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'X') && is_hex(s[i + 2])) {
            i += 2;
            while (i < n && is_hex(s[i]))
                i++;
            memcpy(buf + o, "0x...", 5);
            o += 5;
        } else {
            buf[o++] = s[i++];
        }
    }
    return o;
}

/* Escaped into the room's tail (4 * n bytes at most), then stripped to its
 * head: stripping at most doubles ("0x1" is "0x..."), so 8 * n bytes of
 * head never reach the tail. Escaping first or stripping first gives the
 * same: an escape makes no "0x" (its 'x' follows a '\'), and a control
 * character ends a hex number as its escape's '\' does. */
size_t ember_stack_text_fold(const char *s, size_t n, bool strip_hex, char *buf)
{
    char *tail = buf + 8 * n;
    size_t m = ember_text_escape_into(s, n, tail);
    if (strip_hex)
        return ember_name_strip_hex(tail, m, buf);
    memmove(buf, tail, m);
    return m;
}

bool ember_stack_text_unfit(const char *s, size_t n, bool strip_hex)
{
    return (strip_hex && memmem(s, n, "0x", 2)) || ember_text_has_ctl(s, n);
}
