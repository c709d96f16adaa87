/*
 * record_back.h - `ember record`'s outputs other than perf.data, made by
 * reading its recording back (record_back.c).
 */
#ifndef EMBER_CLI_RECORD_BACK_H
#define EMBER_CLI_RECORD_BACK_H

#include "cli.h"
#include "ember/write.h"
#include "ember/record.h"

#include <stddef.h>

/* What is written from a recording, and the names it goes by. */
struct record_back {
    const struct ember_writer_format *w; /* OUT's writer; NULL: Perfetto's timeline */
    char name[512];                      /* the recording in messages: "the recording of CMD" */
    const char *title;                   /* the profile's: CMD's base name, "system"... */
    const char *events;                  /* the command's runtime events (GC phases), or NULL */
    const char *during, *outside;        /* gc: the samples inside / outside GC phases */
};

/* b's name and title, from what is recorded. */
void record_back_names(struct record_back *b, const struct ember_record_opts *ro);
/* Where the recording is made: TMPDIR, else /tmp. */
const char *record_back_dir(void);
/* An unnamed file there for the recording: its descriptor, or -1 after
 * saying why. */
int record_back_scratch(const struct record_back *b);
/* Reads the recording in fd back and writes it into o (opened before
 * recording), which it finishes or removes: 0, or 1 after saying why. */
int record_back_write(const struct record_back *b, int fd, struct cli_output *o);

#endif
