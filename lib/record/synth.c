/*
 * synth.c - records for what existed before the recording began, made
 * from /proc as perf synthesizes them: the kernel's text mapping (from
 * /proc/kallsyms' _text), and for each running process (-p, -a) a COMM
 * record per thread and an MMAP2 record per executable mapping of
 * /proc/PID/maps (every mapping in DWARF mode, as the kernel reports them). A command recorded from
 * its exec needs only the kernel's: the kernel reports its comm and mappings itself.
 *
 * Each synthesized record ends with a sample_id trailer of zeros, as perf's
 * do: time 0 sorts it before every sample.
 */
#include "record/record_impl.h"
#include "base/diag.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "wire/perf_data_format.h"

/* The sample_type bits that put a field in the sample_id trailer. */
size_t rec_id_trailer_size(const struct ember_recorder *r)
{
    uint64_t t = r->attr.sample_type;
    const uint64_t bits[] = {PERF_SAMPLE_TID,       PERF_SAMPLE_TIME, PERF_SAMPLE_ID,
                             PERF_SAMPLE_STREAM_ID, PERF_SAMPLE_CPU,  PERF_SAMPLE_IDENTIFIER};
    size_t n = 0;
    for (size_t i = 0; i < sizeof(bits) / sizeof(bits[0]); i++)
        n += (t & bits[i]) ? 8 : 0;
    return n;
}

struct synth_rec {
    unsigned char b[PATH_MAX + 256] __attribute__((aligned(8)));
    size_t len;
};

static void put(struct synth_rec *s, const void *p, size_t n)
{
    memcpy(s->b + s->len, p, n);
    s->len += n;
}

static void put_u32(struct synth_rec *s, uint32_t v)
{
    put(s, &v, sizeof(v));
}

static void put_u64(struct synth_rec *s, uint64_t v)
{
    put(s, &v, sizeof(v));
}

/* A string with its NUL, padded with zeros to 8 bytes. */
static void put_name(struct synth_rec *s, const char *name)
{
    size_t n = strlen(name); /* NUL-terminated; a path is cut as the kernel's are */
    if (n > PATH_MAX - 1)
        n = PATH_MAX - 1;
    size_t padded = (n + 1 + 7) & ~(size_t)7;
    memcpy(s->b + s->len, name, n);
    memset(s->b + s->len + n, 0, padded - n);
    s->len += padded;
}

static void start(struct synth_rec *s, uint32_t type, uint16_t misc)
{
    memset(s->b, 0, sizeof(struct perf_event_header));
    memcpy(s->b, &type, sizeof(type));
    memcpy(s->b + 4, &misc, sizeof(misc));
    s->len = sizeof(struct perf_event_header);
}

static int finish(struct ember_recorder *r, struct synth_rec *s, struct ember_diag *d)
{
    size_t trailer = rec_id_trailer_size(r);
    memset(s->b + s->len, 0, trailer);
    s->len += trailer;
    uint16_t size = (uint16_t)s->len;
    memcpy(s->b + 6, &size, sizeof(size));
    return rec_emit(r, s->b, s->len, d);
}

/* _text's address, 0 when /proc/kallsyms hides addresses (kptr_restrict). */
static uint64_t kernel_text(void)
{
    FILE *f = fopen("/proc/kallsyms", "re");
    if (!f)
        return 0;
    char line[512];
    uint64_t addr = 0;
    while (fgets(line, sizeof(line), f)) {
        char type, name[256];
        uint64_t a;
        if (sscanf(line, "%" SCNx64 " %c %255s", &a, &type, name) == 3 &&
            strcmp(name, "_text") == 0) {
            addr = a;
            break;
        }
    }
    fclose(f);
    return addr;
}

/* The running kernel's build-id, from its ELF notes in /sys/kernel/notes
 * (namesz, descsz, type, then name and desc padded to 4 bytes). */
static int kernel_build_id(struct ember_recorder *r)
{
    unsigned char notes[4096];
    FILE *f = fopen("/sys/kernel/notes", "re");
    size_t n = f ? fread(notes, 1, sizeof(notes), f) : 0;
    if (f)
        fclose(f);
    for (size_t off = 0; off + 12 <= n;) {
        uint32_t h[3];
        memcpy(h, notes + off, sizeof(h));
        size_t name = (h[0] + 3u) & ~3u, desc = (h[1] + 3u) & ~3u;
        if (name > n || desc > n || off + 12 + name + desc > n)
            break;
        if (h[2] == 3 && h[0] == 4 && memcmp(notes + off + 12, "GNU", 4) == 0) /* NT_GNU_BUILD_ID */
            return rec_note_dso(r, "[kernel.kallsyms]", 17, notes + off + 12 + name, h[1], true);
        off += 12 + name + desc;
    }
    return 0;
}

int rec_synth_kernel(struct ember_recorder *r, struct ember_diag *d)
{
    if (r->attr.exclude_kernel)
        return 0;
    int err = kernel_build_id(r);
    if (err < 0)
        return err;
    uint64_t text = kernel_text();
    if (!text)
        return 0;
    struct synth_rec local, *p = &local;
    start(p, PERF_RECORD_MMAP, PERF_RECORD_MISC_KERNEL);
    put_u32(p, (uint32_t)PD_HOST_KERNEL_ID);
    put_u32(p, 0);
    put_u64(p, text);
    put_u64(p, ~0ULL - text);
    put_u64(p, text);
    put_name(p, "[kernel.kallsyms]_text");
    return finish(r, p, d);
}

static int synth_comm(struct ember_recorder *r, pid_t pid, pid_t tid, struct ember_diag *d)
{
    char path[96], comm[64] = "";
    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0; /* the thread ended */
    if (!fgets(comm, sizeof(comm), f))
        comm[0] = '\0';
    fclose(f);
    comm[strcspn(comm, "\n")] = '\0';
    struct synth_rec s;
    start(&s, PERF_RECORD_COMM, 0);
    put_u32(&s, (uint32_t)pid);
    put_u32(&s, (uint32_t)tid);
    put_name(&s, comm);
    return finish(r, &s, d);
}

static uint32_t prot_of(const char *perms)
{
    return (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
           (perms[2] == 'x' ? PROT_EXEC : 0);
}

/* One line of /proc/PID/maps: executable, or any with mmap_data (DWARF
 * unwinders read .eh_frame_hdr from read-only maps). */
static int synth_map(struct ember_recorder *r, pid_t pid, const char *line, struct ember_diag *d)
{
    uint64_t lo, hi, pgoff, ino;
    unsigned maj, min;
    char perms[8];
    int name_at = 0;
    if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64 " %x:%x %" SCNu64 " %n", &lo, &hi,
               perms, &pgoff, &maj, &min, &ino, &name_at) < 7 ||
        strlen(perms) < 4 || (perms[2] != 'x' && !r->attr.mmap_data))
        return 0;
    const char *name = line + name_at;
    char anon[] = "//anon";
    if (!*name)
        name = anon;
    struct synth_rec s;
    start(&s, PERF_RECORD_MMAP2,
          PERF_RECORD_MISC_USER | (perms[2] == 'x' ? 0 : PERF_RECORD_MISC_MMAP_DATA));
    put_u32(&s, (uint32_t)pid);
    put_u32(&s, (uint32_t)pid);
    put_u64(&s, lo);
    put_u64(&s, hi - lo);
    put_u64(&s, pgoff);
    put_u32(&s, maj);
    put_u32(&s, min);
    put_u64(&s, ino);
    put_u64(&s, 0); /* ino_generation */
    put_u32(&s, prot_of(perms));
    put_u32(&s, perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE);
    put_name(&s, name);
    return finish(r, &s, d);
}

static int synth_maps(struct ember_recorder *r, pid_t pid, struct ember_diag *d)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0; /* ended, or a kernel thread */
    char *line = NULL;
    size_t cap = 0;
    int err = 0;
    ssize_t n;
    while (!err && (n = getline(&line, &cap, f)) > 0) {
        if (line[n - 1] == '\n')
            line[n - 1] = '\0';
        err = synth_map(r, pid, line, d);
    }
    free(line);
    fclose(f);
    return err;
}

int rec_synth_process(struct ember_recorder *r, pid_t pid, struct ember_diag *d)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (!dir)
        return 0;
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(dir));)
        if (isdigit((unsigned char)e->d_name[0]))
            err = synth_comm(r, pid, (pid_t)atoi(e->d_name), d);
    closedir(dir);
    return err ? err : synth_maps(r, pid, d);
}

int rec_synth_all(struct ember_recorder *r, struct ember_diag *d)
{
    DIR *dir = opendir("/proc");
    if (!dir)
        return ember_diag_set(d, -EIO, "/proc", 0, "cannot list the processes: %s",
                              strerror(errno));
    int err = 0;
    for (struct dirent *e; !err && (e = readdir(dir));)
        if (isdigit((unsigned char)e->d_name[0]))
            err = rec_synth_process(r, (pid_t)atoi(e->d_name), d);
    closedir(dir);
    return err;
}
