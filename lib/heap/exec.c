/*
 * exec.c - exec ends a process image: its file gets END (exec) first, and
 * the new image, which inherits LD_PRELOAD, starts a file of its own
 * (heap.PID.N+1). A failed exec goes on recording into the same file
 * (records after END are allowed: the reader takes them).
 *
 * Interposed: execve, execv, execvp, execvpe, the entries a program calls
 * with an argument vector (glibc's execl* and posix_spawn reach the kernel
 * without them: such an image's file has no END, as a killed one). The
 * real ones are found with dlsym(RTLD_NEXT) when first used, with the
 * recorder's flag set (dlsym may allocate).
 */
#include "heap/heap_impl.h"

#include <dlfcn.h>
#include <unistd.h>

typedef int execve_fn(const char *, char *const[], char *const[]);
typedef int execvp_fn(const char *, char *const[]);

extern char **environ;

/* glibc's own function name, past ours. */
static void *real(const char *name)
{
    bool was = heap_tls.busy;
    heap_tls.busy = true;
    void *f = dlsym(RTLD_NEXT, name);
    heap_tls.busy = was;
    return f;
}

HEAP_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    static execve_fn *f;
    if (!f)
        f = (execve_fn *)real("execve");
    heap_write_end(EMBER_HEAP_END_EXEC);
    return f(path, argv, envp);
}

HEAP_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

HEAP_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    static execve_fn *f;
    if (!f)
        f = (execve_fn *)real("execvpe");
    heap_write_end(EMBER_HEAP_END_EXEC);
    return f(file, argv, envp);
}

HEAP_EXPORT int execvp(const char *file, char *const argv[])
{
    static execvp_fn *f;
    if (!f)
        f = (execvp_fn *)real("execvp");
    heap_write_end(EMBER_HEAP_END_EXEC);
    return f(file, argv);
}
