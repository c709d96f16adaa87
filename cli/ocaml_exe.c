/*
 * ocaml_exe.c - whether a command runs an OCaml 5 program, told before it
 * runs. ember record follows the runtime events of the process it starts,
 * which OCaml's runtime opens by path as it starts, in a directory that
 * must exist by then (else the program aborts): that directory
 * (private_dir.c) is made only for a command that may write them.
 *
 * OCaml 5's runtime, linked into every native program and into ocamlrun
 * for bytecode, reads OCAML_RUNTIME_EVENTS_START: a program file holding
 * those bytes has it. The process followed is the command's own, so the
 * program is argv[0], or one that a wrapper which execs (env, nice,
 * taskset...) names later: each of the first words of argv that is an
 * executable file (looked up in PATH as execvp does, when it has no '/')
 * is read, and a script's interpreter (#!, through env) with it. A program
 * that runs OCaml in a child (a shell script, make) is not followed
 * anyway: its events would have gone unread.
 */
#include "trace_run.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

enum { WORDS_LOOKED_AT = 16 };

static const char marker[] = "OCAML_RUNTIME_EVENTS_START";

static bool is_exe(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* The executable file word names, into buf: itself with a '/', else the
 * first in PATH (an empty entry: the working directory). */
static bool find_exe(const char *word, char *buf, size_t cap)
{
    if (strchr(word, '/')) {
        snprintf(buf, cap, "%s", word);
        return is_exe(buf);
    }
    const char *path = getenv("PATH");
    for (const char *p = path && *path ? path : "/bin:/usr/bin";;) {
        const char *colon = strchrnul(p, ':');
        int len = (int)(colon - p);
        if ((size_t)snprintf(buf, cap, "%.*s%s%s", len, p, len ? "/" : "", word) < cap &&
            is_exe(buf))
            return true;
        if (!*colon)
            return false;
        p = colon + 1;
    }
}

/* A script's interpreter from its first line (len bytes at text), into
 * buf: "#!/bin/sh -e" gives /bin/sh, "#!/usr/bin/env ocamlrun" ocamlrun. */
static void interpreter(const char *text, size_t len, char *buf, size_t cap)
{
    char line[512];
    const char *nl = memchr(text, '\n', len);
    size_t n = (nl ? (size_t)(nl - text) : len) - 2;
    snprintf(line, sizeof(line), "%.*s", (int)(n < sizeof(line) ? n : sizeof(line) - 1), text + 2);
    char *save, *word = strtok_r(line, " \t", &save);
    const char *slash = word ? strrchr(word, '/') : NULL;
    if (word && strcmp(slash ? slash + 1 : word, "env") == 0)
        do /* env's options (-S...) come before the program */
            word = strtok_r(NULL, " \t", &save);
        while (word && word[0] == '-');
    snprintf(buf, cap, "%s", word ? word : "");
}

/* Whether the file at path holds the marker; interp gets the interpreter
 * of a script ("" for none). */
static bool has_marker(const char *path, char *interp, size_t cap)
{
    interp[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return false;
    void *m = fstat(fd, &st) == 0 && st.st_size > 2
                  ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                  : MAP_FAILED;
    close(fd);
    if (m == MAP_FAILED)
        return false;
    bool found = memmem(m, (size_t)st.st_size, marker, sizeof(marker) - 1) != NULL;
    if (!found && memcmp(m, "#!", 2) == 0)
        interpreter(m, (size_t)st.st_size, interp, cap);
    munmap(m, (size_t)st.st_size);
    return found;
}

/* Whether the program word names (or its script's interpreter) has OCaml
 * 5's runtime. */
static bool ocaml_word(const char *word)
{
    char path[4096], interp[4096];
    if (!find_exe(word, path, sizeof(path)))
        return false;
    if (has_marker(path, interp, sizeof(interp)))
        return true;
    return interp[0] && find_exe(interp, path, sizeof(path)) &&
           has_marker(path, interp, sizeof(interp));
}

bool trace_side_wanted(char *const *argv)
{
    for (int i = 0; argv[i] && i < WORDS_LOOKED_AT; i++)
        if (ocaml_word(argv[i]))
            return true;
    return false;
}
