/*
 * test_tidy.c - frame names from perf symbols: FlameGraph's rules, and
 * where ember departs from them on purpose (C++ templates and lambdas,
 * operator names, Rust hashes, kernel and JIT modules).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "read/perf/perf_tidy.h"

#include <string.h>

#define S(lit) lit, strlen(lit)

static void check(size_t (*fn)(char *, size_t), const char *in, const char *want)
{
    char buf[512];
    strcpy(buf, in);
    size_t n = fn(buf, strlen(buf));
    assert_int_equal(n, strlen(want));
    assert_string_equal(buf, want);
}

static void test_generic_flamegraph_rules(void **state)
{
    (void)state;
    check(ember_tidy_generic, "main(int, char**)", "main");
    /* a ';' stays in the name: folded views spell it ':' */
    check(ember_tidy_generic, "a;b", "a;b");
    check(ember_tidy_generic, "RegExp:[&<>\"']", "RegExp:[&<>]");
    check(ember_tidy_generic, "Lorg/mozilla/javascript/ContextFactory;.call(Lorg/mozilla/Ctx;)V",
          "Lorg/mozilla/javascript/ContextFactory;.call");
    check(ember_tidy_generic, "(anonymous namespace)::helper(int)",
          "(anonymous namespace)::helper");
    check(ember_tidy_generic, "net/http.(*Client).Do", "net/http.(*Client).Do");
}

static void test_generic_keeps_cxx(void **state)
{
    (void)state;
    /* FlameGraph would cut all of these at their first '(' */
    check(ember_tidy_generic,
          "std::_Function_handler<void (int), main::{lambda(int)#1}>::_M_invoke(std::_Any_data "
          "const&, int&&)",
          "std::_Function_handler<void (int), main::{lambda(int)#1}>::_M_invoke");
    check(ember_tidy_generic, "std::function<int (int, int)>::operator()(int, int) const",
          "std::function<int (int, int)>::operator()");
    check(ember_tidy_generic,
          "std::operator<< <std::char_traits<char> >(std::ostream&, char const*)",
          "std::operator<< <std::char_traits<char> >");
    check(ember_tidy_generic, "Foo::operator<(Foo const&) const", "Foo::operator<");
    check(ember_tidy_generic, "Foo::operator[](unsigned long)", "Foo::operator[]");
    check(ember_tidy_generic, "void std::vector<int>::emplace_back<int>(int&&)",
          "void std::vector<int>::emplace_back<int>");
}

static void test_java(void **state)
{
    (void)state;
    check(ember_tidy_java, "Ljava/lang/Thread:.run", "java/lang/Thread:.run");
    check(ember_tidy_java, "LZ4_compress", "LZ4_compress");
}

static void test_rust(void **state)
{
    (void)state;
    check(ember_tidy_rust, "std::sys::unix::fs::File::open::hb90e1c1c787080f0",
          "std::sys::unix::fs::File::open");
    check(ember_tidy_rust,
          "_$LT$std..collections..hash..map..HashMap$LT$K$C$$u20$V$GT$$GT$::insert::"
          "h980e74df27f75c7d",
          "<std::collections::hash::map::HashMap<K, V>>::insert");
    check(ember_tidy_rust, "_ZN3std2rt10lang_start17h0123456789abcdefE",
          "_ZN3std2rt10lang_start17h0123456789abcdefE");
    check(ember_tidy_rust, "core::fmt::$u21$::fmt::h0123456789abcdef", "core::fmt::!::fmt");
    check(ember_tidy_rust, "plain_function", "plain_function");
    check(ember_tidy_rust, "not::hash::hzzzzzzzzzzzzzzzz", "not::hash::hzzzzzzzzzzzzzzzz");
}

static void test_modules(void **state)
{
    (void)state;
    assert_true(ember_module_is_kernel(S("[kernel.kallsyms]")));
    assert_true(ember_module_is_kernel(S("/lib/modules/4.3.0/build/vmlinux")));
    assert_true(ember_module_is_kernel(S("/usr/lib/debug/boot/vmlinux-5.4.14-cloudflare")));
    assert_true(ember_module_is_kernel(S("/lib/modules/5.4/mlx5_core.ko")));
    assert_false(ember_module_is_kernel(S("[unknown]")));
    assert_false(ember_module_is_kernel(S("/usr/lib/libc.so.6")));
    assert_false(ember_module_is_kernel(S("/home/vmlinux/tool")));
    assert_true(ember_module_is_jit(S("/tmp/perf-1234.map")));
    assert_true(ember_module_is_jit(S("/tmp/jitted-31714-4145673320.so")));
    assert_false(ember_module_is_jit(S("/tmp/perf-.map")));
    assert_false(ember_module_is_jit(S("/usr/lib/libjitted.so")));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_generic_flamegraph_rules),
        cmocka_unit_test(test_generic_keeps_cxx),
        cmocka_unit_test(test_java),
        cmocka_unit_test(test_rust),
        cmocka_unit_test(test_modules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
