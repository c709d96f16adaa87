/*
 * symver.c - libsymver.so for symchoice.c: vfunc under a local name and
 * two versions of its public one (vfunc@VER_1, vfunc@@VER_2, in .symtab as
 * the linker writes them since binutils 2.35), as glibc's
 * __libc_start_main; perf keeps the versions in the names it prints.
 */
__asm__(".text\n.p2align 4\n"
        ".type vfunc_impl, @function\n"
        ".globl vfunc_v1\n.type vfunc_v1, @function\n"
        ".globl vfunc_v2\n.type vfunc_v2, @function\n"
        "vfunc_impl:\nvfunc_v1:\nvfunc_v2:\n"
        ".cfi_startproc\n"
        "    mov %rdi, %rcx\n"
        "1:  imul $1103515245, %rax, %rax\n"
        "    add $1, %rax\n"
        "    dec %rcx\n"
        "    jnz 1b\n"
        "    ret\n"
        ".cfi_endproc\n"
        ".size vfunc_impl, .-vfunc_impl\n"
        ".size vfunc_v1, .-vfunc_v1\n"
        ".size vfunc_v2, .-vfunc_v2\n"
        ".symver vfunc_v1, vfunc@VER_1\n"
        ".symver vfunc_v2, vfunc@@VER_2\n");
