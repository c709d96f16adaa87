/*
 * perf_data_format.h - the perf.data file's layout: the one place its
 * constants are defined, for the reader and for the writer ember record uses.
 *
 * The kernel's half of the contract (struct perf_event_attr, the record
 * types up to 63, PERF_SAMPLE_* bits, PERF_CONTEXT_* markers) comes from
 * <linux/perf_event.h>; what is here is perf's own half, from Linux's
 * tools/perf (util/header.h, tools/lib/perf/include/perf/event.h and
 * Documentation/perf.data-file-format.txt). All values are little-endian
 * on the machines ember supports; a file of the other endianness is refused.
 *
 * The file header (PD_HEADER_SIZE bytes): magic "PERFILE2", its own size,
 * attr_size, then three (offset, size) sections of u64s - attrs, data,
 * event_types (unused) - then a bitmap of PD_FEAT_BITS feature bits. The
 * feature sections follow the data section, one (offset, size) pair per set
 * bit, in bit order. Each attrs entry is a perf_event_attr of attr_size - 16
 * bytes followed by the (offset, size) of its array of u64 sample ids.
 */
#ifndef EMBER_WIRE_PERF_DATA_FORMAT_H
#define EMBER_WIRE_PERF_DATA_FORMAT_H

#define PD_MAGIC         "PERFILE2"
#define PD_MAGIC_LEN     8
#define PD_MAGIC_SWAPPED "2ELIFREP" /* the magic of a big-endian file */
#define PD_MAGIC_V1      "PERFFILE" /* perf's first format, before Linux 2.6.37 */

/* perf's own record types, beyond the kernel's */
enum {
    PD_RECORD_HEADER_ATTR = 64,
    PD_RECORD_HEADER_EVENT_TYPE = 65,
    PD_RECORD_HEADER_TRACING_DATA = 66,
    PD_RECORD_HEADER_BUILD_ID = 67,
    PD_RECORD_FINISHED_ROUND = 68,
    PD_RECORD_ID_INDEX = 69,
    PD_RECORD_AUXTRACE_INFO = 70,
    PD_RECORD_AUXTRACE = 71,
    PD_RECORD_AUXTRACE_ERROR = 72,
    PD_RECORD_THREAD_MAP = 73,
    PD_RECORD_CPU_MAP = 74,
    PD_RECORD_STAT_CONFIG = 75,
    PD_RECORD_STAT = 76,
    PD_RECORD_STAT_ROUND = 77,
    PD_RECORD_EVENT_UPDATE = 78,
    PD_RECORD_TIME_CONV = 79,
    PD_RECORD_HEADER_FEATURE = 80,
    PD_RECORD_COMPRESSED = 81,
    PD_RECORD_FINISHED_INIT = 82,
};

/* Feature bits (util/header.h: HEADER_*); their sections follow the data. */
enum {
    PD_FEAT_TRACING_DATA = 1,
    PD_FEAT_BUILD_ID = 2,
    PD_FEAT_HOSTNAME = 3,
    PD_FEAT_OSRELEASE = 4,
    PD_FEAT_VERSION = 5,
    PD_FEAT_ARCH = 6,
    PD_FEAT_NRCPUS = 7,
    PD_FEAT_CPUDESC = 8,
    PD_FEAT_CPUID = 9,
    PD_FEAT_TOTAL_MEM = 10,
    PD_FEAT_CMDLINE = 11,
    PD_FEAT_EVENT_DESC = 12,
    PD_FEAT_CPU_TOPOLOGY = 13,
    PD_FEAT_NUMA_TOPOLOGY = 14,
    PD_FEAT_BRANCH_STACK = 15,
    PD_FEAT_PMU_MAPPINGS = 16,
    PD_FEAT_GROUP_DESC = 17,
    PD_FEAT_AUXTRACE = 18,
    PD_FEAT_STAT = 19,
    PD_FEAT_CACHE = 20,
    PD_FEAT_SAMPLE_TIME = 21,
    PD_FEAT_MEM_TOPOLOGY = 22,
    PD_FEAT_CLOCKID = 23,
    PD_FEAT_DIR_FORMAT = 24,
    PD_FEAT_BPF_PROG_INFO = 25,
    PD_FEAT_BPF_BTF = 26,
    PD_FEAT_COMPRESSED = 27,
    PD_FEAT_CPU_PMU_CAPS = 28,
    PD_FEAT_CLOCK_DATA = 29,
    PD_FEAT_HYBRID_TOPOLOGY = 30,
    PD_FEAT_PMU_CAPS = 31,
    PD_FEAT_BITS = 256,
};

enum {
    PD_HEADER_SIZE = 104,        /* magic, size, attr_size, 3 sections, the feature bitmap */
    PD_PIPE_HEADER_SIZE = 16,    /* magic, size: the records follow */
    PD_BUILD_ID_MAX = 20,        /* bytes of a build-id in a HEADER_BUILD_ID entry */
    PD_BUILD_ID_ENTRY_NAME = 36, /* offset of the file name in one: header, pid, 24 bytes of id */
    PD_BUILD_ID_SIZE_AT = 32,    /* the id's length, after its 20 bytes, when misc says so */
    PD_NAME_ALIGN = 64,          /* strings in feature sections: u32 length, padded to this */
    PD_HOST_KERNEL_ID = -1,      /* the pid of the host's kernel and build-id entries */
};

/* misc of a HEADER_BUILD_ID entry: byte PD_BUILD_ID_SIZE_AT holds the length */
#define PD_MISC_BUILD_ID_SIZE (1u << 15)

#endif
