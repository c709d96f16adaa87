/*
 * dso.c - where perf finds a mapped object's symbols (see dso.h): its
 * build-id cache, the ELF file it reads, JIT maps, the vDSO; and a
 * file's build-id, for a recorder to write.
 * Invariants: nothing here keeps state; a table is returned finished, or
 * freed and NULL on error.
 */
#include "symbol/dso.h"
#include "symbol/elfsyms.h"

#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { BUILD_ID_MAX = 20 };

void ember_dso_build_id_hex(char *out, const uint8_t *bits, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < len; i++) {
        out[2 * i] = hex[bits[i] >> 4];
        out[2 * i + 1] = hex[bits[i] & 15];
    }
    out[2 * len] = '\0';
}

bool ember_dso_cache_path(const uint8_t *bits, size_t len, const char *name, char *out, size_t cap)
{
    const char *dir = getenv("PERF_BUILDID_DIR"), *home = getenv("HOME");
    char bid[2 * BUILD_ID_MAX + 1];
    if (len == 0 || len > BUILD_ID_MAX || (!dir && !home))
        return false;
    ember_dso_build_id_hex(bid, bits, len);
    int n = dir ? snprintf(out, cap, "%s/.build-id/%.2s/%s/%s", dir, bid, bid + 2, name)
                : snprintf(out, cap, "%s/.debug/.build-id/%.2s/%s/%s", home, bid, bid + 2, name);
    return n > 0 && (size_t)n < cap && access(out, R_OK) == 0;
}

int ember_dso_elf_first(struct ember_symbolizer *sym, const struct ember_dso_elf *e,
                        struct ember_symbol_module **mod)
{
    char cached[4096];
    const char *path = ember_dso_cache_path(e->build_id, e->build_id_len, e->vdso ? "vdso" : "elf",
                                            cached, sizeof(cached))
                           ? cached
                           : e->path;
    struct ember_diag why;
    return ember_symbolizer_module(sym, path, strlen(path), e->build_id, e->build_id_len, mod,
                                   &why);
}

int ember_dso_elf_symbols(struct ember_symbolizer *sym, const struct ember_dso_elf *e,
                          struct ember_symbol_module **mod, const struct ember_symtab **syms,
                          struct ember_diag *why)
{
    char cached[4096];
    const char *order[2] = {e->path, NULL};
    ember_diag_clear(why);
    if (ember_dso_cache_path(e->build_id, e->build_id_len, e->vdso ? "vdso" : "elf", cached,
                             sizeof(cached))) {
        order[0] = cached;
        order[1] = e->path;
    }
    struct ember_symbol_module *m;
    int err = -ENOENT;
    *mod = NULL;
    *syms = NULL;
    for (int i = 0; i < 2 && order[i]; i++) {
        err = ember_symbolizer_module(sym, order[i], strlen(order[i]), e->build_id, e->build_id_len,
                                      &m, why);
        if (err == -ENOMEM)
            return err;
        /* a stripped binary's debug file lies beside it, not beside the copy */
        bool full = !err && ember_elfsyms_has_symtab(m);
        if (!err && (!*mod || full))
            *mod = m;
        if (full)
            break;
    }
    return *mod ? ember_elfsyms_of(*mod, syms) : err;
}

const char *ember_dso_symbol_at(const struct ember_symbol_module *mod,
                                const struct ember_symtab *syms, uint64_t map_start,
                                uint64_t map_pgoff, uint64_t ip)
{
    const struct ember_symtab_sym *s;
    uint64_t addr = ip, off;
    if (mod && ember_symbol_module_file_address(mod, map_start, map_pgoff, ip, &addr) < 0)
        return NULL;
    return ember_symtab_lookup(syms, addr, &s, &off) == 0 ? s->name : NULL;
}

/* One line "START SIZE name" into t (a line that is not one is skipped). */
static int jit_line(char *line, size_t len, struct ember_arena *names, struct ember_symtab *t)
{
    char *end;
    uint64_t start = strtoull(line, &end, 16);
    if (end == line || *end != ' ' || end + 3 >= line + len)
        return 0;
    char *sz = end + 1;
    uint64_t size = strtoull(sz, &end, 16);
    if (*end != ' ' || end + 3 >= line + len)
        return 0;
    const char *name = ember_arena_strndup(names, end + 1, strlen(end + 1));
    if (!name)
        return -ENOMEM;
    return size ? ember_symtab_add(t, name, start, size, 0, true) : 0;
}

int ember_dso_jit_symbols(const char *path, struct ember_arena *names, struct ember_symtab **out)
{
    *out = NULL;
    FILE *fp = fopen(path, "r");
    if (!fp)
        return -ENOENT;
    struct ember_symtab *t = NULL;
    int err = ember_symtab_new(&t);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while (!err && (len = getline(&line, &cap, fp)) > 0) {
        line[--len] = '\0'; /* perf drops the last byte, newline or not */
        err = jit_line(line, (size_t)len, names, t);
    }
    free(line);
    fclose(fp);
    if (!err)
        err = ember_symtab_finish(t);
    if (err)
        ember_symtab_free(t);
    else
        *out = t;
    return err;
}

/* The vDSO's file as the kernel maps it whole (getauxval says where):
 * its length from its ELF header, where its section headers and its
 * loaded segment end, the page rounded up. 0 where the header is not an
 * ELF64 one (an ELF32 vDSO): /proc/self/maps then says where it ends. */
static size_t vdso_by_auxv(uintptr_t *lo)
{
    const unsigned char *p = (const unsigned char *)getauxval(AT_SYSINFO_EHDR);
    Elf64_Ehdr eh;
    if (!p)
        return 0;
    memcpy(&eh, p, sizeof(eh));
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phoff > 4096)
        return 0;
    uint64_t end = eh.e_shoff + (uint64_t)eh.e_shnum * eh.e_shentsize;
    for (unsigned i = 0; i < eh.e_phnum && eh.e_phoff + (i + 1) * sizeof(Elf64_Phdr) <= 4096; i++) {
        Elf64_Phdr ph;
        memcpy(&ph, p + eh.e_phoff + i * sizeof(ph), sizeof(ph));
        if (ph.p_type == PT_LOAD && ph.p_offset + ph.p_filesz > end)
            end = ph.p_offset + ph.p_filesz;
    }
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    *lo = (uintptr_t)p;
    return end && end < (64u << 20) ? (size_t)((end + page - 1) / page * page) : 0;
}

/* The same from the [vdso] line of /proc/self/maps (its kernel printing
 * this process's many threads' mappings was 0.5 ms of naming's time). */
static size_t vdso_by_maps(uintptr_t *lo)
{
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return 0;
    char line[512];
    uint64_t start = 0, end = 0;
    while (fgets(line, sizeof(line), maps))
        if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &start, &end) == 2)
            break;
    fclose(maps);
    *lo = (uintptr_t)start;
    return end > start ? (size_t)(end - start) : 0;
}

int ember_dso_vdso_open(int *fd_out, char *path, size_t cap)
{
    uintptr_t lo = 0;
    size_t len = vdso_by_auxv(&lo);
    if (!len)
        len = vdso_by_maps(&lo);
    if (!len)
        return -ENOENT;
    int fd = memfd_create("ember-vdso", MFD_CLOEXEC);
    if (fd < 0)
        return -ENOENT;
    /* write() reads the mapping as the kernel does: a length past it fails
     * (EFAULT), it does not fault here */
    if (write(fd, (const void *)lo, len) != (ssize_t)len) {
        close(fd);
        return -ENOENT;
    }
    *fd_out = fd;
    snprintf(path, cap, "/proc/self/fd/%d", fd);
    return 0;
}

int ember_dso_open_regular(const char *path)
{
    struct stat st;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    return fd;
}

/* Read with libdwelf, as the symbolizer's libdwfl reads the build-id it checks. */
int ember_dso_file_build_id(const char *path, unsigned char *id, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    const void *bits = NULL;
    ssize_t n = elf ? dwelf_elf_gnu_build_id(elf, &bits) : -1;
    int len = n > 0 && (size_t)n <= cap ? (int)n : 0;
    if (len)
        memcpy(id, bits, (size_t)len);
    if (elf)
        elf_end(elf);
    close(fd);
    return len;
}
