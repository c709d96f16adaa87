/*
 * messages.c - how ember talks to its user on stderr: "ember CMD: ..."
 * lines that say what failed, and on what. What a message quotes from the
 * input (a name, a path) may hold control characters: each message is
 * one line, its control characters spelled "\xNN" (ember_text_escape),
 * so that no input moves or recolours the terminal.
 */
#include "cli.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
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

/* s on stderr, its control characters escaped. */
static void put_text(const char *s)
{
    char small[1024];
    size_t n = strlen(s), need = ember_text_escape(s, n, small, sizeof(small));
    char *big = need < sizeof(small) ? NULL : malloc(need + 1);
    if (big)
        ember_text_escape(s, n, big, need + 1);
    fputs(big ? big : small, stderr);
    free(big);
}

static void vmsg(const char *kind, const char *fmt, va_list ap)
{
    char *text = NULL;
    fprintf(stderr, "%s: %s", command, kind);
    if (vasprintf(&text, fmt, ap) >= 0)
        put_text(text);
    free(text);
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
    put_text(d->file);
    if (d->file[0] && d->line)
        fprintf(stderr, ":%llu: ", (unsigned long long)d->line);
    else if (d->file[0])
        fputs(": ", stderr);
}

void cli_diag_error(const struct ember_diag *d, int err)
{
    fprintf(stderr, "%s: ", command);
    print_where(d);
    put_text(d->msg[0] ? d->msg : strerror(err < 0 ? -err : err));
    fputc('\n', stderr);
}

enum { WARNINGS_PER_FILE = 10 };

void cli_warnings_flush(struct cli_warnings *w)
{
    if (w->hidden) {
        fprintf(stderr, "%s: warning: ", command);
        put_text(w->file);
        fprintf(stderr, ": %llu more warnings not shown\n", (unsigned long long)w->hidden);
    }
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
    put_text(d->msg);
    fputc('\n', stderr);
    pthread_mutex_unlock(&warn_lock);
}
