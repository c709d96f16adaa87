/*
 * cleanup.c - temporary outputs removed when a signal ends the program.
 *
 * Every -o result is made as a temporary file (or directory) beside its
 * target and renamed at the end; a SIGINT, SIGTERM, SIGHUP or SIGPIPE in
 * between must not leave it behind. The handler removes what is registered
 * here, then re-raises the signal with its default action, so the exit
 * status still says which signal ended the command.
 *
 * Invariants: the table is only written with the four signals blocked, and
 * the handler touches nothing but the table and async-signal-safe calls
 * (unlink, rmdir, open, getdents64, unlinkat, sigaction, raise). A path is
 * registered before the temporary exists is visible to anyone but us, and
 * unregistered only after it was renamed or removed.
 */
#include "cli.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { CLEANUP_SLOTS = 8 };

struct cleanup_slot {
    volatile sig_atomic_t used;
    bool dir;
    char path[PATH_MAX];
};

static struct cleanup_slot slots[CLEANUP_SLOTS];
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

/* The files of a temporary directory (ours: flat, no subdirectories),
 * with getdents64 because readdir may allocate. */
static void remove_dir_now(const char *path)
{
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        char buf[4096] __attribute__((aligned(8)));
        long n;
        while ((n = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0) {
            for (long off = 0; off < n;) {
                const char *rec = buf + off;
                unsigned short reclen;
                memcpy(&reclen, rec + 16, sizeof(reclen));
                const char *name = rec + 19; /* d_ino, d_off, d_reclen, d_type */
                if (strcmp(name, ".") != 0 && strcmp(name, "..") != 0)
                    unlinkat(fd, name, 0);
                off += reclen;
            }
        }
        close(fd);
    }
    rmdir(path);
}

static void on_signal(int sig)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (!slots[i].used)
            continue;
        if (slots[i].dir)
            remove_dir_now(slots[i].path);
        else
            unlink(slots[i].path);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = SIG_DFL;
    sigaction(sig, &sa, NULL);
    raise(sig); /* delivered when the handler returns: the default action */
}

void cli_cleanup_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); i++)
        sigaddset(&sa.sa_mask, cleanup_signals[i]);
    for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); i++) {
        struct sigaction old;
        /* a signal ignored by whoever started us (nohup) stays ignored */
        if (sigaction(cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(cleanup_signals[i], &sa, NULL);
    }
}

void cli_cleanup_block(sigset_t *old)
{
    sigset_t set;
    sigemptyset(&set);
    for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(cleanup_signals[0]); i++)
        sigaddset(&set, cleanup_signals[i]);
    sigprocmask(SIG_BLOCK, &set, old);
}

void cli_cleanup_unblock(const sigset_t *old)
{
    sigprocmask(SIG_SETMASK, old, NULL);
}

int cli_cleanup_add(const char *path, bool dir)
{
    if (strlen(path) >= PATH_MAX)
        return -1;
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        if (slots[i].used)
            continue;
        slots[i].dir = dir;
        strcpy(slots[i].path, path);
        slots[i].used = 1;
        return 0;
    }
    return -1;
}

void cli_cleanup_remove(const char *path)
{
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        if (slots[i].used && strcmp(slots[i].path, path) == 0)
            slots[i].used = 0;
}

volatile sig_atomic_t cli_stop_asked;

static void ask_stop(int sig)
{
    (void)sig;
    cli_stop_asked = 1;
}

void cli_catch_stop_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = ask_stop;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL); /* the terminal closed: stop CMD, keep what was recorded */
}
