/*
 * ocaml_names.h - OCaml's names of its runtime events (ocaml_names.c).
 * table: 0 for OCaml 5.0 to 5.2, 1 for 5.3 and later. NULL for an id the
 * table does not know.
 */
#ifndef EMBER_TRACEFILE_OCAML_NAMES_H
#define EMBER_TRACEFILE_OCAML_NAMES_H

const char *ember_ocaml_phase_name(int table, unsigned id);
const char *ember_ocaml_counter_name(int table, unsigned id);
const char *ember_ocaml_lifecycle_name(unsigned id);

#endif
