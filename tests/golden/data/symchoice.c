/*
 * symchoice.c - symbols whose choice perf makes one way (golden/perfdata's
 * symbol_choice case, unit/test_elfsyms): each function spins n rounds.
 *   - label_outer, a sized function with a label of no size in its middle
 *     (label_inside): the function holds the label's addresses;
 *   - aliases at one address, one rule of perf's choose_best_symbol each:
 *     global over local (alias_global), global over weak (strong), fewer
 *     leading underscores (_under), the longest name (len_the_longest);
 *     perf settles sizes first, so a symbol of no size stretched to the
 *     next one is sized too (nosize_longer_name beats sized by its length);
 *     a label and a function (perf 6.1: the longest name,
 *     notype_longer_name; later perfs prefer the function, func_typed);
 *   - vfunc, in libsymver.so, with two versions of one name (symver.c);
 *   - labs through the PLT, many times: samples in its stub.
 * x86-64 (the aliases are assembly).
 */
#include <stdio.h>
#include <stdlib.h>

/* n rounds of a multiply chain, n in rdi */
#define LOOP                                                                                       \
    "    mov %rdi, %rcx\n"                                                                         \
    "1:  imul $1103515245, %rax, %rax\n"                                                           \
    "    add $1, %rax\n"                                                                           \
    "    dec %rcx\n"                                                                               \
    "    jnz 1b\n"

/* one function under two names; size: whether each has one (with CFI:
 * DWARF unwinders leave it for its caller) */
#define ALIASES(a, b, size)                                                                        \
    ".p2align 4\n" a ":\n" b ":\n.cfi_startproc\n" LOOP "    ret\n.cfi_endproc\n" size

__asm__(".text\n"
        ".globl label_outer\n.type label_outer, @function\n"
        ".globl label_inside\n"
        ".p2align 4\n"
        "label_outer:\n.cfi_startproc\n" LOOP "label_inside:\n" LOOP "    ret\n.cfi_endproc\n"
        ".size label_outer, .-label_outer\n"

        ".type alias_local_impl, @function\n"
        ".globl alias_global\n.type alias_global, @function\n" ALIASES(
            "alias_local_impl", "alias_global",
            ".size alias_local_impl, .-alias_local_impl\n.size alias_global, .-alias_global\n")

            ".weak weak_longer_name\n.type weak_longer_name, @function\n"
            ".globl strong\n.type strong, @function\n" ALIASES(
                "weak_longer_name", "strong",
                ".size weak_longer_name, .-weak_longer_name\n.size strong, .-strong\n")

                ".globl __under_longer_name\n.type __under_longer_name, @function\n"
                ".globl _under\n.type _under, @function\n" ALIASES(
                    "__under_longer_name", "_under",
                    ".size __under_longer_name, .-__under_longer_name\n.size _under, .-_under\n")

                    ".globl len_short\n.type len_short, @function\n"
                    ".globl len_the_longest\n.type len_the_longest, @function\n" ALIASES(
                        "len_short", "len_the_longest",
                        ".size len_short, .-len_short\n.size len_the_longest, .-len_the_longest\n")

                        ".globl nosize_longer_name\n.type nosize_longer_name, @function\n"
                        ".globl sized\n.type sized, @function\n" ALIASES("nosize_longer_name",
                                                                         "sized",
                                                                         ".size sized, .-sized\n")

                            ".globl notype_longer_name\n"
                            ".globl func_typed\n.type func_typed, @function\n" ALIASES(
                                "notype_longer_name", "func_typed",
                                ".size notype_longer_name, .-notype_longer_name\n.size func_typed, "
                                ".-func_typed\n"));

long label_outer(long n);
long alias_global(long n);
long strong(long n);
long _under(long n);
long len_short(long n);
long sized(long n);
long func_typed(long n);
long vfunc(long n);

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000, s = 0;
    long (*const spin[])(long) = {label_outer, alias_global, strong,     _under,
                                  len_short,   sized,        func_typed, vfunc};
    for (size_t i = 0; i < sizeof(spin) / sizeof(*spin); i++)
        s += spin[i](n);
    for (long i = 0; i < n; i++)
        s += labs(i - n / 2);
    printf("%ld\n", s);
    return 0;
}
