/*
 * test_demangle.c - readable names from OCaml 4 and 5 symbols (raw, and as
 * perf prints them), C++ Itanium, Rust legacy and v0; plain names left
 * alone. Expected forms from the compilers' own output (see
 * ../shared/notes/formats-and-clients.md, section 5).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "symbol/demangle.h"

#include <stdlib.h>
#include <string.h>

static void check(const char *in, const char *want)
{
    char *out = ember_demangle(in, strlen(in), EMBER_DEMANGLE_TRANSFORM);
    if (!want) {
        if (out)
            fail_msg("%s: expected no change, got %s", in, out);
        return;
    }
    if (!out)
        fail_msg("%s: expected %s, got no change", in, want);
    assert_string_equal(out, want);
    free(out);
}

static void test_ocaml4(void **state)
{
    (void)state;
    check("camlStdlib__List__map_236", "Stdlib.List.map");
    check("camlMylib__Foo__$2b$21_81", "Mylib.Foo.(+!)");
    check("camlMylib__Foo__f$27_85", "Mylib.Foo.f'");
    check("camlMain__fun_188", "Main.fun_188"); /* anonymous: the stamp tells them apart */
    check("camlUtil__square_92", "Util.square");
}

static void test_ocaml5(void **state)
{
    (void)state;
    check("camlStdlib__List.init_332", "Stdlib.List.init");
    check("camlStdlib__List.map_dps_1255", "Stdlib.List.map_dps");
    check("camlStdlib.print_endline_369", "Stdlib.print_endline");
    check("camlAlloc.descend_744", "Alloc.descend");
    check("camlStdlib.$5e_139", "Stdlib.(^)");
    check("camlStdlib.$5e$5e_451", "Stdlib.(^^)");
    check("camlMain.entry", "Main.entry");
    check("_camlFib$fib_270", "Fib.fib");     /* 5.4 on macOS: '$' separates */
    check("_camlFib$$5e$2a_272", "Fib.(^*)"); /* ... and escapes follow it */
}

static void test_ocaml_as_perf_prints_it(void **state)
{
    (void)state;
    check("Alloc.descend_744", "Alloc.descend");
    check("Stdlib.Map.add_436", "Stdlib.Map.add");
    check("Stdlib.^_139", "Stdlib.(^)");
    check("Alloc.fun_1124", NULL);          /* anonymous: kept as is */
    check("caml_startup.code_begin", NULL); /* runtime symbol */
    check("Alloc.entry", NULL);             /* no stamp: not perf's OCaml */
    check("java.lang.Thread.run", NULL);
}

static void test_cxx(void **state)
{
    (void)state;
    check("_ZNSt6vectorIiSaIiEE9push_backERKi",
          "std::vector<int, std::allocator<int> >::push_back");
    check("_ZNK3Foo3barEPKcd", "Foo::bar");
    check("_ZN12_GLOBAL__N_14helpEi", "(anonymous namespace)::help");
    check("_Z4helpi.constprop.0", "help");
    check("__ZNK3Foo3barEPKcd", "Foo::bar"); /* macOS' extra underscore */
    check("_ZTV3Foo", "vtable for Foo");
}

static void test_rust(void **state)
{
    (void)state;
    check("_ZN4demo3net4http14handle_request17h116518a590aa9757E",
          "demo::net::http::handle_request");
    check("_ZN44_$LT$demo..Circle$u20$as$u20$demo..Shape$GT$4area17h80e95ad30c9014e8E",
          "<demo::Circle as demo::Shape>::area");
    check("_RNvCs2ndz2m94zur_4demo4main", "demo::main");
    check("_RNvXs_Cs2ndz2m94zur_4demoNtB4_6CircleNtB4_5Shape4area",
          "<demo::Circle as demo::Shape>::area");
    check("_RINvCs2ndz2m94zur_4demo11generic_summEB2_", "demo::generic_sum::<u32>");
}

static void test_plain_names_stay(void **state)
{
    (void)state;
    check("main", NULL);
    check("caml_call_gc", NULL);
    check("[unknown]", NULL);
    check("_Zgarbage", NULL);
    check("camlX", NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ocaml4),
        cmocka_unit_test(test_ocaml5),
        cmocka_unit_test(test_ocaml_as_perf_prints_it),
        cmocka_unit_test(test_cxx),
        cmocka_unit_test(test_rust),
        cmocka_unit_test(test_plain_names_stay),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
