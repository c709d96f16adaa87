/*
 * leaf.c - the caller a frame-pointer walk skips, from the module's CFI and
 * the top of the stack (see leaf.h).
 *
 * The rule read is the CFA's: DW_OP_bregx on RSP (DWARF register 7) with an
 * offset means the frame is not (yet, or ever) on RBP, so the kernel's walk
 * - which starts from RBP - began at the caller's caller; the return address
 * is then at CFA - 8 = SP + offset - 8 (the x86-64 ABI's call pushes it
 * there). An RBP-based CFA (register 6) means the walk is right. Any other
 * expression (PLT stubs, signal frames) is not guessed at.
 */
#include "symbol/leaf.h"
#include "symbol/dso.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { DWARF_RSP = 7 };

struct ember_leaf_cfi {
    int fd;
    Elf *elf;
    Dwarf_CFI *cfi;
};

int ember_leaf_cfi_open(const char *path, struct ember_leaf_cfi **out)
{
    *out = NULL;
#if !defined(__x86_64__)
    (void)path;
    return -EOPNOTSUPP;
#else
    struct ember_leaf_cfi *c = calloc(1, sizeof(*c));
    if (!c)
        return -ENOMEM;
    c->fd = ember_dso_open_regular(path);
    if (c->fd < 0) {
        int err = c->fd;
        free(c);
        return err;
    }
    elf_version(EV_CURRENT);
    c->elf = elf_begin(c->fd, ELF_C_READ_MMAP, NULL);
    bool is_elf = c->elf && elf_kind(c->elf) == ELF_K_ELF;
    c->cfi = is_elf ? dwarf_getcfi_elf(c->elf) : NULL;
    if (!c->cfi) {
        int err = is_elf ? -ENODATA : -EINVAL;
        ember_leaf_cfi_close(c);
        return err;
    }
    *out = c;
    return 0;
#endif
}

void ember_leaf_cfi_close(struct ember_leaf_cfi *c)
{
    if (!c)
        return;
    if (c->cfi)
        dwarf_cfi_end(c->cfi);
    if (c->elf)
        elf_end(c->elf);
    if (c->fd >= 0)
        close(c->fd);
    free(c);
}

/* The CFA's offset from RSP at pc: 1, 0 when not RSP-based or unknown. */
static int cfa_on_rsp(struct ember_leaf_cfi *c, uint64_t pc, int64_t *offset)
{
    Dwarf_Frame *frame = NULL;
    if (dwarf_cfi_addrframe(c->cfi, pc, &frame) != 0)
        return 0;
    Dwarf_Op *ops = NULL;
    size_t nops = 0;
    int on_rsp = 0;
    if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx &&
        ops[0].number == DWARF_RSP) {
        *offset = (int64_t)ops[0].number2;
        on_rsp = 1;
    }
    free(frame);
    return on_rsp;
}

int ember_leaf_caller(struct ember_leaf_cfi *c, uint64_t pc, const unsigned char *stack, size_t len,
                      uint64_t *ret)
{
    int64_t offset = 0;
    if (!cfa_on_rsp(c, pc, &offset) || offset < 8)
        return 0;
    size_t at = (size_t)offset - 8;
    if (at + sizeof(*ret) > len)
        return -ERANGE;
    memcpy(ret, stack + at, sizeof(*ret));
    return 1;
}

int ember_leaf_file_open(struct ember_symbolizer *sym, const char *path, size_t len,
                         struct ember_leaf_file *f)
{
    struct ember_diag why;
    f->mod = NULL;
    f->cfi = NULL;
    int err = ember_symbolizer_module(sym, path, len, NULL, 0, &f->mod, &why);
    if (!err)
        err = ember_leaf_cfi_open(path, &f->cfi);
    if (err)
        f->mod = NULL; /* empty, as leaf.h says */
    return err;
}

void ember_leaf_file_close(struct ember_leaf_file *f)
{
    ember_leaf_cfi_close(f->cfi);
    f->cfi = NULL;
}

int ember_leaf_file_caller(const struct ember_leaf_file *f, uint64_t map_start, uint64_t map_pgoff,
                           uint64_t ip, const unsigned char *stack, size_t len, uint64_t *ret)
{
    uint64_t addr;
    if (ember_symbol_module_file_address(f->mod, map_start, map_pgoff, ip, &addr) < 0)
        return 0;
    int got = ember_leaf_caller(f->cfi, addr, stack, len, ret);
    return got == -ENOMEM ? got : got == 1;
}
