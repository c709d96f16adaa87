/*
 * not_functions.h - what ember report's tables of functions leave out, not
 * being functions (library-internal):
 *
 * - a process or thread root (perf's comm, "comm-PID/TID"): every stack of
 *   its own passes through it; perf report sorts by symbol, and a process
 *   is none. Only a root is one: a function named like a process (a
 *   program called "main") is ranked where it is called;
 * - in the ranking by total, a name in brackets that perf and FlameGraph
 *   give addresses no symbol was found for, "[unknown]" or "[libx.so]":
 *   one frame here for every such address, its total that of all stacks
 *   through any of them, where perf report --children ranks each address
 *   apart. --addrs names each ("[unknown <7f00>]"): those are ranked. Their
 *   self weight is ranked: it adds up, as perf's addresses' do.
 */
#ifndef EMBER_WRITE_NOT_FUNCTIONS_H
#define EMBER_WRITE_NOT_FUNCTIONS_H

#include "ember/model.h"
#include "base/writer.h"

#include <stdbool.h>

/* Per frame of named (the names view of p, or p itself): whether its name
 * is one of p's process or thread frames'. *out holds a flag per frame of
 * named; free() it. */
int ember_report_root_names(const struct ember_profile *p, const struct ember_profile *named,
                            bool **out);
/* Whether a name stands for unresolved addresses, many at once. */
bool ember_report_unresolved(const char *name, size_t len);
/* The line that says what a ranking by total left out, if anything. */
void ember_report_left_out(struct ember_writer *w, size_t roots, size_t unresolved);

#endif
