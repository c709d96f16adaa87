/*
 * messages.c - how ember talks to its user on stderr: "ember CMD: ..."
 * lines that say what failed, and on what.
 */
#include "cli.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static char command[64] = "ember";

void cli_set_command(const char *name)
{
    snprintf(command, sizeof(command), "ember%s%s", name ? " " : "", name ? name : "");
}

const char *cli_command_name(void)
{
    return command;
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: %s", command, kind);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("", fmt, ap);
    va_end(ap);
}

void cli_warning(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vmsg("warning: ", fmt, ap);
    va_end(ap);
}

static void print_where(const struct ember_diag *d)
{
    if (d->file[0] && d->line)
        fprintf(stderr, "%s:%llu: ", d->file, (unsigned long long)d->line);
    else if (d->file[0])
        fprintf(stderr, "%s: ", d->file);
}

void cli_diag_error(const struct ember_diag *d, int err)
{
    fprintf(stderr, "%s: ", command);
    print_where(d);
    if (d->msg[0])
        fprintf(stderr, "%s\n", d->msg);
    else
        fprintf(stderr, "%s\n", strerror(err < 0 ? -err : err));
}

enum { WARNINGS_PER_FILE = 10 };

void cli_warnings_flush(struct cli_warnings *w)
{
    if (w->hidden)
        fprintf(stderr, "%s: warning: %s: %llu more warnings not shown\n", command, w->file,
                (unsigned long long)w->hidden);
    w->shown = 0;
    w->hidden = 0;
    w->file[0] = '\0';
}

/* Readers may warn from several threads. */
static pthread_mutex_t warn_lock = PTHREAD_MUTEX_INITIALIZER;

void cli_warn_cb(void *ctx, const struct ember_diag *d)
{
    struct cli_warnings *w = ctx;
    pthread_mutex_lock(&warn_lock);
    if (w) {
        if (strcmp(w->file, d->file) != 0) {
            cli_warnings_flush(w);
            snprintf(w->file, sizeof(w->file), "%s", d->file);
        }
        if (w->shown >= WARNINGS_PER_FILE) {
            w->hidden++;
            pthread_mutex_unlock(&warn_lock);
            return;
        }
        w->shown++;
    }
    fprintf(stderr, "%s: warning: ", command);
    print_where(d);
    fprintf(stderr, "%s\n", d->msg);
    pthread_mutex_unlock(&warn_lock);
}
