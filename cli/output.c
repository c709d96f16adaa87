/*
 * output.c - where a command's result goes. With -o FILE the result is
 * written to a temporary file beside FILE and renamed over it at the end,
 * so a failure never leaves half a file (and never clobbers the old one).
 * The temporary is unnamed (O_TMPFILE) until then where the system allows:
 * however the command ends, kill -9 included, nothing is left of it; it
 * gets a name beside FILE only for the rename.
 * Special files (-o /dev/null, a FIFO) are written in place; a symlink is
 * written through; a replaced file keeps its mode. Directories of results
 * (CTF) are made the same way: whole, then renamed. Temporaries are
 * registered with cleanup.c, which removes them if a signal ends us.
 */
#include "cli.h"
#include "ember/write.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

/* Where writing path lands: path itself, or the file its symlinks lead to
 * (a link is written through, never replaced). Returns a malloc'd path, or
 * NULL with errno set (ELOOP for a cycle). */
static char *resolve_links(const char *path)
{
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat st;
        if (lstat(cur, &st) < 0 || !S_ISLNK(st.st_mode))
            return cur; /* a regular file, something else, or nothing yet */
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof(link) - 1);
        if (n < 0) {
            free(cur);
            return NULL;
        }
        link[n] = '\0';
        const char *slash = strrchr(cur, '/');
        char *next = NULL;
        if (link[0] == '/' || !slash) {
            next = strdup(link);
        } else if (asprintf(&next, "%.*s%s", (int)(slash - cur + 1), cur, link) < 0) {
            next = NULL;
        }
        free(cur);
        cur = next;
    }
    if (cur) {
        free(cur);
        errno = ELOOP;
    }
    return NULL;
}

/* The directory of o->target ("." for a bare name), for O_TMPFILE. */
static char *target_dir(const struct cli_output *o)
{
    const char *slash = strrchr(o->target, '/');
    if (!slash)
        return strdup(".");
    return strndup(o->target, slash == o->target ? 1 : (size_t)(slash - o->target));
}

/* An unnamed file in the target's directory (O_TMPFILE): nothing is left
 * of it however we end, kill -9 included, until commit names it. 0, or -1
 * with errno: EOPNOTSUPP where it cannot be made or named later (a file
 * system without O_TMPFILE, an older kernel, no /proc to link it from). */
static int make_unnamed(struct cli_output *o)
{
    char *dir = target_dir(o);
    if (!dir) {
        errno = ENOMEM;
        return -1;
    }
    o->fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    int saved = errno;
    free(dir);
    if (o->fd < 0) {
        /* kernels without O_TMPFILE see O_DIRECTORY | O_RDWR: EISDIR */
        errno = saved == EISDIR || saved == EINVAL ? EOPNOTSUPP : saved;
        return -1;
    }
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
    if (access(proc, F_OK) < 0) {
        close(o->fd);
        o->fd = -1;
        errno = EOPNOTSUPP;
        return -1;
    }
    o->unnamed = true;
    return 0;
}

/* The temporary's name beside o->target: .NAME.XXXXXX. */
static int temp_name(struct cli_output *o, const char *suffix)
{
    const char *slash = strrchr(o->target, '/');
    int dirlen = slash ? (int)(slash - o->target + 1) : 0;
    if (asprintf(&o->tmp, "%.*s.%s.%s", dirlen, o->target, slash ? slash + 1 : o->target, suffix) <
        0) {
        o->tmp = NULL;
        errno = ENOMEM;
        return -1;
    }
    return 0;
}

/* Makes the temporary file beside o->target: unnamed where the system
 * can, else named and registered for removal on a signal before anyone
 * can see it. */
static int make_temp(struct cli_output *o)
{
    o->unnamed = false;
    if (make_unnamed(o) == 0 || errno != EOPNOTSUPP)
        return o->unnamed ? 0 : -1;
    if (temp_name(o, "XXXXXX") < 0)
        return -1;
    sigset_t old;
    cli_cleanup_block(&old);
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    int saved = errno;
    if (o->fd >= 0 && cli_cleanup_add(o->tmp, false) < 0) {
        unlink(o->tmp);
        close(o->fd);
        o->fd = -1;
        saved = ENAMETOOLONG;
    }
    cli_cleanup_unblock(&old);
    if (o->fd < 0) {
        free(o->tmp);
        o->tmp = NULL;
        errno = saved;
        return -1;
    }
    return 0;
}

/* Gives the unnamed file its temporary name (signals blocked by the
 * caller), registered for removal as a named one: rename cannot take an
 * unnamed file, and linkat cannot replace the target. */
static int name_unnamed(struct cli_output *o)
{
    char proc[64];
    snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
    for (unsigned i = 0; i < 100; i++) {
        char suffix[32];
        snprintf(suffix, sizeof(suffix), "%d.%u", (int)getpid(), i);
        if (temp_name(o, suffix) < 0)
            return -1;
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0) {
            if (cli_cleanup_add(o->tmp, false) == 0)
                return 0;
            unlink(o->tmp);
            errno = ENAMETOOLONG;
        }
        int saved = errno;
        free(o->tmp);
        o->tmp = NULL;
        errno = saved;
        if (saved != EEXIST)
            return -1;
    }
    return -1;
}

int cli_output_open_mode(struct cli_output *o, const char *path, mode_t create_mode)
{
    o->fd = STDOUT_FILENO;
    o->path = path && strcmp(path, "-") != 0 ? path : NULL;
    o->tmp = NULL;
    o->target = NULL;
    o->unnamed = false;
    if (!o->path)
        return 0;
    o->target = resolve_links(o->path);
    if (!o->target) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        return -1;
    }
    struct stat st;
    bool exists = stat(o->target, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        cli_error("cannot write %s: it is a directory", o->path);
        free(o->target);
        return -1;
    }
    if (exists && !S_ISREG(st.st_mode)) { /* /dev/null, a FIFO: in place */
        o->fd = open(o->target, O_WRONLY | O_CLOEXEC);
        free(o->target);
        o->target = NULL;
        if (o->fd < 0) {
            cli_error("cannot write %s: %s", o->path, strerror(errno));
            return -1;
        }
        return 0;
    }
    if (make_temp(o) < 0) {
        cli_error("cannot create %s: %s", o->path, strerror(errno));
        free(o->target);
        return -1;
    }
    /* mkstemp makes 0600 files: a file replaced keeps its mode (and, when
     * we may, its owner); a new one gets create_mode less the umask */
    if (exists) {
        fchmod(o->fd, st.st_mode & 07777);
        if (st.st_uid != geteuid() || st.st_gid != getegid())
            (void)!fchown(o->fd, st.st_uid, st.st_gid); /* only root may; else ours */
    } else {
        mode_t mask = umask(0);
        umask(mask);
        fchmod(o->fd, create_mode & ~mask);
    }
    return 0;
}

int cli_output_open(struct cli_output *o, const char *path)
{
    return cli_output_open_mode(o, path, 0666);
}

static int sink_write(void *ctx, const char *buf, size_t len)
{
    struct cli_output *o = ctx;
    while (len > 0) {
        ssize_t n = write(o->fd, buf, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

struct ember_sink cli_output_sink(struct cli_output *o)
{
    return (struct ember_sink){sink_write, o};
}

int cli_output_commit(struct cli_output *o)
{
    if (!o->path)
        return 0;
    int ret = 0;
    sigset_t old;
    cli_cleanup_block(&old);
    if (o->unnamed && name_unnamed(o) < 0) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        ret = -1;
    }
    /* close first: on NFS a write error may only show now */
    if (close(o->fd) < 0 && !ret) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        ret = -1;
    }
    if (o->tmp) {
        if (!ret && rename(o->tmp, o->target) < 0) {
            cli_error("cannot write %s: %s", o->path, strerror(errno));
            ret = -1;
        }
        if (ret)
            unlink(o->tmp);
        cli_cleanup_remove(o->tmp);
    }
    cli_cleanup_unblock(&old);
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
    return ret;
}

int cli_output_finish(struct cli_output *o, int err, const struct ember_diag *d)
{
    if (!err)
        return cli_output_commit(o) < 0 ? 1 : 0;
    if (d && d->msg[0])
        cli_diag_error(d, err);
    else
        cli_error("cannot write %s: %s", o->path ? o->path : "standard output", strerror(-err));
    cli_output_abort(o);
    return 1;
}

int cli_output_finish_doing(struct cli_output *o, int err, const struct ember_diag *d,
                            const char *doing)
{
    if (!err || !d || !d->msg[0])
        return cli_output_finish(o, err, NULL);
    cli_error("cannot %s: %s", doing, d->msg);
    cli_output_abort(o);
    return 1;
}

void cli_output_abort(struct cli_output *o)
{
    if (!o->path)
        return;
    if (o->tmp) { /* an unnamed one goes with its descriptor */
        sigset_t old;
        cli_cleanup_block(&old);
        unlink(o->tmp);
        cli_cleanup_remove(o->tmp);
        cli_cleanup_unblock(&old);
    }
    free(o->tmp);
    free(o->target);
    o->tmp = o->target = NULL;
    close(o->fd);
}

/* Removes dir and its files, if every one is ours; -1 (errno set) if not. */
static int remove_dir(const char *dir, bool (*ours)(const char *name))
{
    DIR *dp = opendir(dir);
    if (!dp)
        return -1;
    struct dirent *de;
    int ret = 0;
    while (ret == 0 && (de = readdir(dp))) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (!ours(de->d_name)) {
            errno = ENOTEMPTY;
            ret = -1;
        } else {
            ret = unlinkat(dirfd(dp), de->d_name, 0);
        }
    }
    closedir(dp);
    return ret == 0 ? rmdir(dir) : -1;
}

/* Whether an existing path could be replaced: a directory of our files. */
static bool replaceable(const char *path, bool (*ours)(const char *name))
{
    DIR *dp = opendir(path);
    if (!dp)
        return false;
    struct dirent *de;
    bool ok = true;
    while (ok && (de = readdir(dp)))
        ok = strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0 || ours(de->d_name);
    closedir(dp);
    return ok;
}

int cli_output_dir_open(struct cli_output_dir *o, const char *path, bool (*ours)(const char *name))
{
    o->path = path;
    o->ours = ours;
    o->tmp = NULL;
    struct stat st;
    if (lstat(path, &st) == 0 && !(S_ISDIR(st.st_mode) && replaceable(path, ours))) {
        cli_error("%s exists and is not an earlier result: remove it or choose another "
                  "directory",
                  path);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path + 1) : 0;
    if (asprintf(&o->tmp, "%.*s.%s.XXXXXX", dirlen, path, slash ? slash + 1 : path) < 0) {
        o->tmp = NULL;
        cli_error("out of memory");
        return -1;
    }
    sigset_t old;
    cli_cleanup_block(&old);
    bool made = mkdtemp(o->tmp) != NULL;
    int saved = errno;
    if (made && cli_cleanup_add(o->tmp, true) < 0) {
        rmdir(o->tmp);
        made = false;
        saved = ENAMETOOLONG;
    }
    cli_cleanup_unblock(&old);
    if (!made) {
        cli_error("cannot create %s: %s", path, strerror(saved));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    mode_t mask = umask(0);
    umask(mask);
    chmod(o->tmp, 0777 & ~mask);
    return 0;
}

int cli_output_dir_commit(struct cli_output_dir *o)
{
    struct stat st;
    int ret = 0;
    sigset_t old;
    cli_cleanup_block(&old);
    if (lstat(o->path, &st) == 0 && remove_dir(o->path, o->ours) < 0) {
        cli_error("cannot replace %s: %s", o->path, strerror(errno));
        ret = -1;
    }
    if (ret == 0 && rename(o->tmp, o->path) < 0) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        ret = -1;
    }
    if (ret < 0)
        remove_dir(o->tmp, o->ours);
    cli_cleanup_remove(o->tmp);
    cli_cleanup_unblock(&old);
    free(o->tmp);
    o->tmp = NULL;
    return ret;
}

void cli_output_dir_abort(struct cli_output_dir *o)
{
    if (o->tmp) {
        sigset_t old;
        cli_cleanup_block(&old);
        remove_dir(o->tmp, o->ours);
        cli_cleanup_remove(o->tmp);
        cli_cleanup_unblock(&old);
    }
    free(o->tmp);
    o->tmp = NULL;
}

/* A flame graph of p to out (stdout if NULL): 0, or 1 after saying why not. */
int cli_render_flame(const struct ember_profile *p, const struct ember_flame_opts *fo,
                     const char *out)
{
    struct cli_output o;
    struct ember_diag d;
    ember_diag_clear(&d);
    if (cli_output_open(&o, out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&o);
    return cli_output_finish(&o, ember_flame_render(p, fo, &sink, &d), &d);
}

int cli_write_folded(const struct ember_profile *p, const char *out)
{
    struct cli_output o;
    if (cli_output_open(&o, out) < 0)
        return 1;
    struct ember_sink sink = cli_output_sink(&o);
    return cli_output_finish(&o, ember_write_folded(p, &sink), NULL);
}
