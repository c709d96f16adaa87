/*
 * frame.c - spelling a symbolized frame (see frame.h).
 */
#include "symbol/frame.h"

#include <stdio.h>
#include <string.h>

size_t ember_symbol_frame_context(const struct ember_symbol_frame *f, char *buf, size_t cap)
{
    const char *slash = f->file ? strrchr(f->file, '/') : NULL;
    const char *file = slash ? slash + 1 : f->file ? f->file : "??";
    int n = snprintf(buf, cap, "%s:%s:%u", f->function, file, (unsigned)f->line);
    return n < 0 ? 0 : (size_t)n;
}
