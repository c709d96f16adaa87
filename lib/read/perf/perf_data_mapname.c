/*
 * perf_data_mapname.c - what the name of a mapping in a perf.data file says
 * of it, by perf's rules (util/map.c, machine.c): the kernel's text or a
 * module, anonymous memory (whose addresses are their own, and where JIT
 * compilers' /tmp/perf-PID.map names the code), and memory that no file
 * backs at all, which has no symbols to read and nothing to warn about.
 *
 * Invariants: names are taken as (pointer, length), never NUL-terminated;
 * nothing here allocates.
 */
#include "read/perf/perf_data.h"

#include <string.h>

static bool starts_with(const char *s, size_t n, const char *lit)
{
    size_t l = strlen(lit);
    return n >= l && memcmp(s, lit, l) == 0;
}

bool pd_mapname_is_kernel(const char *s, size_t n)
{
    return starts_with(s, n, "[kernel.kallsyms");
}

/* "[xfs]" for /lib/modules/.../xfs.ko(.xz), '-' as '_'. */
size_t pd_mapname_module(const char *path, size_t n, char *out, size_t cap)
{
    const char *base = memrchr(path, '/', n);
    base = base ? base + 1 : path;
    size_t bl = (size_t)(path + n - base), k = 0;
    const char *dot = memchr(base, '.', bl);
    if (dot)
        bl = (size_t)(dot - base);
    out[k++] = '[';
    for (size_t i = 0; i < bl && k + 2 < cap; i++)
        out[k++] = base[i] == '-' ? '_' : base[i];
    out[k++] = ']';
    return k;
}

bool pd_mapname_is_anon(const char *s, size_t n)
{
    return (n == 6 && memcmp(s, "//anon", 6) == 0) || starts_with(s, n, "/dev/zero") ||
           starts_with(s, n, "/anon_hugepage");
}

bool pd_mapname_is_no_dso(const char *s, size_t n)
{
    return starts_with(s, n, "[stack") || starts_with(s, n, "/SYSV") ||
           (n == 6 && memcmp(s, "[heap]", 6) == 0);
}

/* perf's anonymous and no-dso maps (map.c's is_anon_memory,
 * is_no_dso_memory), the kernel's other names in brackets ([anon:x],
 * [vsyscall], [vvar]...; [vdso] has a file, but is told apart before
 * this is asked) and memfd's files, which no path opens. */
bool pd_mapname_is_memory(const char *s, size_t n)
{
    return pd_mapname_is_anon(s, n) || pd_mapname_is_no_dso(s, n) || starts_with(s, n, "[") ||
           starts_with(s, n, "/memfd:");
}
