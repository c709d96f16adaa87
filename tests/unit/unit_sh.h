/*
 * unit_sh.h - running a shell command from a unit test that builds its
 * own programs (cc, binutils): sh(fmt, ...) formats the command and gives
 * its exit status (-1: it could not run; 128: killed by a signal).
 */
#ifndef EMBER_UNIT_SH_H
#define EMBER_UNIT_SH_H

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2), unused));
static int sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    int st = system(cmd);
    return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

#endif
