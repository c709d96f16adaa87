/*
 * A tiny JIT for the perf.data tests: copies a summing loop into anonymous
 * executable memory twice, names the copies in /tmp/perf-PID.map as JIT
 * compilers do (one with a Java-like name), runs them, and removes nothing:
 * the test reads the map file after the run, as perf script does.
 *
 * usage: perfdata_jit [N]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* x86-64: rax = 0; loop rdi times: rax += rdi-- ; ret */
static const unsigned char code[] = {
    0x48, 0x31, 0xc0, /* xor rax, rax */
    0x48, 0x85, 0xff, /* test rdi, rdi */
    0x74, 0x08,       /* je +8 */
    0x48, 0x01, 0xf8, /* add rax, rdi */
    0x48, 0xff, 0xcf, /* dec rdi */
    0xeb, 0xf3,       /* jmp -13 (to test) */
    0xc3,             /* ret */
};

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000000;
    unsigned char *mem =
        mmap(NULL, 8192, PROT_READ | PROT_WRITE | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    memcpy(mem, code, sizeof(code));
    memcpy(mem + 64, code, sizeof(code));
    char path[64];
    snprintf(path, sizeof(path), "/tmp/perf-%d.map", getpid());
    FILE *f = fopen(path, "w");
    fprintf(f, "%lx %zx jit_sum_hot\n", (unsigned long)mem, sizeof(code));
    fprintf(f, "%lx %zx Lcom/example/Foo;.bar (compiled)\n", (unsigned long)(mem + 64),
            sizeof(code));
    fclose(f);
    long (*fn)(long) = (long (*)(long))mem, (*fn2)(long) = (long (*)(long))(mem + 64);
    long s = 0;
    for (int i = 0; i < 3; i++)
        s += fn(n) + fn2(n / 2);
    printf("%ld\n", s);
    return 0;
}
