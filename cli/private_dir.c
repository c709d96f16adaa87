/*
 * private_dir.c - a directory of ember's in TMPDIR, for the files a program
 * it runs opens by path (an OCaml program's runtime events, an
 * <ember/trace.h> ring file) and ember's recordings of them: those cannot
 * be unnamed files, and a kill -9 of ember leaves them behind.
 *
 * So each is TMPDIR/ember-run.XXXXXX, locked (flock) by the ember that
 * made it as long as that process lives; the kernel drops the lock however
 * it ends. The next run (ember record, ember trace: whether it makes one
 * or not) removes every ember-run.* of this user whose lock is free: its
 * owner is gone (no pid is compared, so neither reuse
 * nor another pid namespace misleads it). A removal holds the lock, and a
 * maker checks, once it holds the lock of the directory it made, that the
 * directory still has a name (one removed between mkdtemp and flock is
 * made again): a live ember's directory is never removed.
 *
 * Invariants: the directories are flat (files only) and 0700; they are
 * registered with cleanup.c, which removes them on SIGINT, SIGTERM...; a
 * directory not ours (another user's, a symlink) is never touched. Where
 * flock is not (some network file systems), directories are made unlocked
 * and never removed by another run.
 */
#include "cli.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#define PREFIX "ember-run."

static const char *tmp_root(void)
{
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

/* Removes the files of the directory open as fd, then the directory,
 * name in parent. */
static void remove_flat(int parent, const char *name, int fd)
{
    int copy = dup(fd); /* closedir closes its own */
    DIR *d = copy >= 0 ? fdopendir(copy) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    else if (copy >= 0)
        close(copy);
    unlinkat(parent, name, AT_REMOVEDIR);
}

/* Whether fd (locked by us) is a directory of ours that still has a name. */
static bool ours_and_named(int fd)
{
    struct stat st;
    return fstat(fd, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == geteuid() && st.st_nlink > 0;
}

void cli_private_dir_sweep(void)
{
    DIR *d = opendir(tmp_root());
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, PREFIX, strlen(PREFIX)) != 0)
            continue;
        int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            continue;
        if (flock(fd, LOCK_EX | LOCK_NB) == 0 && ours_and_named(fd))
            remove_flat(dirfd(d), e->d_name, fd);
        close(fd); /* and its lock */
    }
    if (d)
        closedir(d);
}

/* Makes one directory and locks it: 1, 0 when another run's sweep
 * removed it before we held its lock (make another), -1 with errno. */
static int make_locked(char *path, int *lock)
{
    sigset_t old;
    cli_cleanup_block(&old);
    bool made = mkdtemp(path) != NULL;
    int saved = errno;
    if (made && cli_cleanup_add(path, true) < 0) {
        rmdir(path);
        made = false;
        saved = ENAMETOOLONG;
    }
    cli_cleanup_unblock(&old);
    if (!made) {
        errno = saved;
        return -1;
    }
    *lock = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int err;
    do /* a stop signal (no SA_RESTART) must not leave it unlocked */
        err = *lock < 0 ? 0 : flock(*lock, LOCK_EX);
    while (err < 0 && errno == EINTR);
    if (*lock < 0 || err < 0 || ours_and_named(*lock))
        return 1; /* without a lock (no flock here): it works, unswept */
    close(*lock);
    *lock = -1;
    cli_cleanup_remove(path);
    return 0;
}

int cli_private_dir_make(char *path, size_t cap, int *lock)
{
    const char *root = tmp_root();
    *lock = -1;
    for (int tries = 0; tries < 100; tries++) {
        if ((size_t)snprintf(path, cap, "%s/" PREFIX "XXXXXX", root) >= cap - 64) {
            cli_error("TMPDIR is too long: %s", root);
            path[0] = '\0';
            return -1;
        }
        int made = make_locked(path, lock);
        if (made > 0)
            return 0;
        if (made < 0) {
            cli_error("cannot create a directory in %s: %s", root, strerror(errno));
            path[0] = '\0';
            return -1;
        }
    }
    cli_error("cannot create a directory of its own in %s: each one made was removed "
              "at once (100 tries)",
              root);
    path[0] = '\0';
    return -1;
}

void cli_private_dir_remove(char *path, int *lock)
{
    if (!path[0])
        return;
    sigset_t old;
    cli_cleanup_block(&old);
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0) {
        remove_flat(AT_FDCWD, path, fd);
        close(fd);
    }
    cli_cleanup_remove(path);
    cli_cleanup_unblock(&old);
    if (*lock >= 0)
        close(*lock);
    *lock = -1;
    path[0] = '\0';
}
