/*
 * perf_tidy.h - how stackcollapse-perf turns a perf symbol into a frame name,
 * with ember's fixes (library-internal; unit-tested on its own).
 *
 * Each function rewrites the name in place in a buffer of at least
 * len + 1 bytes and returns the new length; none makes a name longer.
 */
#ifndef EMBER_READ_PERF_TIDY_H
#define EMBER_READ_PERF_TIDY_H

#include <stdbool.h>
#include <stddef.h>

/* The top-level parameter list is
 * cut, keeping templates, lambdas, "(anonymous namespace)", Go receivers
 * "pkg.(*T).M" and operator names intact; '"' and '\'' are deleted, as
 * FlameGraph does. */
size_t ember_tidy_generic(char *s, size_t len);

/* Java: "Lorg/foo/Bar;.m" loses its leading 'L' when the name has a '/'. */
size_t ember_tidy_java(char *s, size_t len);

/* Rust names that perf demangled only partly ("std::fs::File::open::h1b2c..."
 * or "_$LT$T$u20$as$u20$Foo$GT$::bar::h0123..."): drop the "::h<16 hex>"
 * hash, and decode the legacy escapes ("$LT$" '<', ".." "::", ...). Other
 * names are left alone. */
size_t ember_tidy_rust(char *s, size_t len);

/* Annotations decided from the module perf printed. */
bool ember_module_is_kernel(const char *mod, size_t len);
bool ember_module_is_jit(const char *mod, size_t len);

#endif
