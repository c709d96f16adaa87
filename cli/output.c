/*
 * output.c - where a command's result goes. With -o FILE the result is
 * written to a temporary file beside FILE and renamed over it at the end,
 * so a failure never leaves half a file (and never clobbers the old one).
 * Special files (-o /dev/null, a FIFO) are written in place.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cli_output_open(struct cli_output *o, const char *path)
{
    o->fd = STDOUT_FILENO;
    o->path = path && strcmp(path, "-") != 0 ? path : NULL;
    o->tmp = NULL;
    if (!o->path)
        return 0;
    struct stat st;
    if (stat(o->path, &st) == 0 && !S_ISREG(st.st_mode)) {
        o->fd = open(o->path, O_WRONLY | O_CLOEXEC);
        if (o->fd < 0) {
            cli_error("cannot write %s: %s", o->path, strerror(errno));
            return -1;
        }
        return 0;
    }
    const char *slash = strrchr(o->path, '/');
    int dirlen = slash ? (int)(slash - o->path + 1) : 0;
    if (asprintf(&o->tmp, "%.*s.%s.XXXXXX", dirlen, o->path, slash ? slash + 1 : o->path) < 0) {
        o->tmp = NULL;
        cli_error("out of memory");
        return -1;
    }
    o->fd = mkostemp(o->tmp, O_CLOEXEC);
    if (o->fd < 0) {
        cli_error("cannot create %s: %s", o->path, strerror(errno));
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    /* mkstemp makes 0600 files; give the result the usual permissions */
    mode_t mask = umask(0);
    umask(mask);
    fchmod(o->fd, 0666 & ~mask);
    return 0;
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
    if (o->tmp && rename(o->tmp, o->path) < 0) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        unlink(o->tmp);
        ret = -1;
    }
    if (close(o->fd) < 0 && !ret) {
        cli_error("cannot write %s: %s", o->path, strerror(errno));
        ret = -1;
    }
    free(o->tmp);
    o->tmp = NULL;
    return ret;
}

void cli_output_abort(struct cli_output *o)
{
    if (!o->path)
        return;
    if (o->tmp) {
        unlink(o->tmp);
        free(o->tmp);
        o->tmp = NULL;
    }
    close(o->fd);
}
