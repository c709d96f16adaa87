/*
 * ocaml_names.c - the names OCaml gives its runtime events, by message id:
 * runtime phases, counters and lifecycle events, as
 * otherlibs/runtime_events/runtime_events.ml names them (runtime_phase_name,
 * runtime_counter_name, lifecycle_name) in the order of the enums of
 * runtime/caml/runtime_events.h. Two tables of phases: OCaml 5.0 to 5.2
 * (each a prefix of the next: ids were only appended; ocaml/ocaml tag
 * 5.2.0), and 5.3 and later (5.3 inserted memprof phases, renumbering the
 * rest; ocaml/ocaml at fd41e1ab55fa); one of counters, to which 5.3 only
 * appended. A file does not say which runtime wrote it.
 */
#include "tracefile/ocaml_names.h"

#include <stddef.h>

static const char *const phases_50[] = {
    "explicit_gc_set",
    "explicit_gc_stat",
    "explicit_gc_minor",
    "explicit_gc_major",
    "explicit_gc_full_major",
    "explicit_gc_compact",
    "major",
    "major_sweep",
    "major_mark_roots",
    "major_mark",
    "minor",
    "minor_local_roots",
    "minor_finalized",
    "explicit_gc_major_slice",
    "finalise_update_first",
    "finalise_update_last",
    "interrupt_remote",
    "major_ephe_mark",
    "major_ephe_sweep",
    "major_finish_marking",
    "major_gc_cycle_domains",
    "major_gc_phase_change",
    "major_gc_stw",
    "major_mark_opportunistic",
    "major_slice",
    "major_finish_cycle",
    "minor_clear",
    "minor_finalizers_oldify",
    "minor_global_roots",
    "minor_leave_barrier",
    "stw_api_barrier",
    "stw_handler",
    "stw_leader",
    "major_finish_sweeping",
    "minor_finalizers_admin",
    "minor_remembered_set",
    "minor_remembered_set_promote",
    "minor_local_roots_promote",
    "domain_condition_wait",
    "domain_resize_heap_reservation",
    "compaction",
    "compaction_evacuate",
    "compaction_forward",
    "compaction_release",
};

static const char *const phases_53[] = {
    "explicit_gc_set",
    "explicit_gc_stat",
    "explicit_gc_minor",
    "explicit_gc_major",
    "explicit_gc_full_major",
    "explicit_gc_compact",
    "major",
    "major_sweep",
    "major_mark_roots",
    "major_memprof_roots",
    "major_mark",
    "minor",
    "minor_local_roots",
    "minor_memprof_roots",
    "minor_memprof_clean",
    "minor_finalized",
    "explicit_gc_major_slice",
    "finalise_update_first",
    "finalise_update_last",
    "interrupt_remote",
    "major_ephe_mark",
    "major_ephe_sweep",
    "major_finish_marking",
    "major_gc_cycle_domains",
    "major_gc_phase_change",
    "major_gc_stw",
    "major_mark_opportunistic",
    "major_slice",
    "major_finish_cycle",
    "minor_clear",
    "minor_finalizers_oldify",
    "minor_global_roots",
    "minor_leave_barrier",
    "stw_api_barrier",
    "stw_handler",
    "stw_leader",
    "major_finish_sweeping",
    "major_memprof_clean",
    "minor_finalizers_admin",
    "minor_remembered_set",
    "minor_remembered_set_promote",
    "minor_local_roots_promote",
    "domain_condition_wait",
    "domain_resize_heap_reservation",
    "compaction",
    "compaction_evacuate",
    "compaction_forward",
    "compaction_release",
    "empty_minor",
};

/* OCaml 5.3 only appended counters: 5.0 to 5.2 know the first 17. */
static const char *const counters[] = {
    "force_minor_alloc_small",
    "force_minor_make_vect",
    "force_minor_set_minor_heap_size",
    "force_minor_memprof",
    "minor_promoted",
    "minor_allocated",
    "request_major_alloc_shr",
    "request_major_adjust_gc_speed",
    "request_minor_realloc_ref_table",
    "request_minor_realloc_ephe_ref_table",
    "request_minor_realloc_custom_table",
    "major_heap_pool_words",
    "major_heap_pool_live_words",
    "major_heap_large_words",
    "major_heap_pool_frag_words",
    "major_heap_pool_live_blocks",
    "major_heap_large_blocks",
    "major_heap_words",
    "major_allocated_words",
    "major_allocated_work",
    "major_dependent_work",
    "major_extra_work",
    "major_work_counter",
    "major_alloc_counter",
    "major_slice_target",
    "major_slice_budget",
};

static const char *const lifecycles[] = {
    "ring_start",  "ring_stop",  "ring_pause",   "ring_resume",
    "fork_parent", "fork_child", "domain_spawn", "domain_terminate",
};

#define COUNT(a) (sizeof(a) / sizeof(a[0]))
enum { COUNTERS_50 = 17 };

const char *ember_ocaml_phase_name(int table, unsigned id)
{
    if (table == 0)
        return id < COUNT(phases_50) ? phases_50[id] : NULL;
    return id < COUNT(phases_53) ? phases_53[id] : NULL;
}

const char *ember_ocaml_counter_name(int table, unsigned id)
{
    return id < (table == 0 ? COUNTERS_50 : COUNT(counters)) ? counters[id] : NULL;
}

const char *ember_ocaml_lifecycle_name(unsigned id)
{
    return id < COUNT(lifecycles) ? lifecycles[id] : NULL;
}
