/*
 * heap_known.cpp - heap_known.c's known answers through C++'s new and
 * delete (which reach malloc and free inside libstdc++): each site is a
 * function of its own (noinline) whose counts and sizes are the constants
 * below; `--truth` prints what a heap profiler must find per site, from
 * those constants (heap_known.c says what each number means).
 *
 * usage: heap_known_cxx [--truth]
 *
 * Build with -O1 -g -fno-omit-frame-pointer. Invariants: the run calls
 * nothing that allocates besides the sites (no iostreams); each site has
 * sizes of its own; the peak is array_site's last array; the first delete
 * after an allocation frees that object or one of another size, so
 * heaptrack's (size, stack) reading of "temporary" is the block's.
 * libstdc++ allocates its emergency exception pool as it loads: that
 * block belongs to no site and the test names it.
 */
#include <cstdio>
#include <cstring>

struct Node {
    long key;
    Node *next;
    char pad[32];
}; /* 48 bytes */

struct Leaky {
    char data[120];
};

constexpr int LEAK_N = 500;      /* leak_objects: new Leaky, never deleted */
constexpr int SCRATCH_N = 10000; /* scratch_site: new char[33], delete[] at once */
constexpr int SCRATCH_SIZE = 33;
constexpr int NODE_N = 20000; /* node_site: new Node, held at the peak */
constexpr int ARRAY_N = 16;   /* array_site: new double[8192], held at the peak */
constexpr int ARRAY_LEN = 8192;

static Leaky *leaks[LEAK_N];
static Node *nodes[NODE_N];
static double *arrays[ARRAY_N];
static volatile char sink;

__attribute__((noinline)) void leak_objects()
{
    for (auto &p : leaks) {
        p = new Leaky;
        p->data[0] = 1;
    }
}

__attribute__((noinline)) void scratch_site()
{
    for (int i = 0; i < SCRATCH_N; i++) {
        char *s = new char[SCRATCH_SIZE];
        s[0] = (char)i;
        sink = sink + s[0];
        delete[] s;
    }
}

__attribute__((noinline)) void node_site()
{
    for (int i = 0; i < NODE_N; i++)
        nodes[i] = new Node{i, i ? nodes[i - 1] : nullptr, {}};
}

__attribute__((noinline)) void array_site()
{
    for (auto &a : arrays) {
        a = new double[ARRAY_LEN];
        a[0] = 1;
    }
}

/* The first delete (a 48 B node) follows a 64 KiB array's allocation. */
static void release()
{
    for (auto *n : nodes)
        delete n;
    for (auto *a : arrays)
        delete[] a;
}

static void truth()
{
    struct site {
        const char *name;
        long allocations, size, peak, leaked, leaked_count, temporary;
    };
    const long leak = LEAK_N * (long)sizeof(Leaky), node = NODE_N * (long)sizeof(Node);
    const long array = ARRAY_N * ARRAY_LEN * (long)sizeof(double);
    const site sites[] = {
        {"leak_objects", LEAK_N, sizeof(Leaky), leak, leak, LEAK_N, 0},
        {"scratch_site", SCRATCH_N, SCRATCH_SIZE, 0, 0, 0, SCRATCH_N},
        {"node_site", NODE_N, sizeof(Node), node, 0, 0, 0},
        {"array_site", ARRAY_N, ARRAY_LEN * sizeof(double), array, 0, 0, 0},
    };
    long total[6] = {};
    std::printf("{\n  \"sites\": {\n");
    for (const site &s : sites) {
        std::printf("    \"%s\": {\"allocations\": %ld, \"bytes\": %ld, \"peak\": %ld, "
                    "\"leaked\": %ld, \"leaked_count\": %ld, \"temporary\": %ld, "
                    "\"sizes\": {\"%ld\": %ld}}%s\n",
                    s.name, s.allocations, s.allocations * s.size, s.peak, s.leaked, s.leaked_count,
                    s.temporary, s.size, s.allocations, &s == &sites[3] ? "" : ",");
        const long v[6] = {s.allocations, s.allocations * s.size, s.peak,
                           s.leaked,      s.leaked_count,         s.temporary};
        for (int j = 0; j < 6; j++)
            total[j] += v[j];
    }
    std::printf("  },\n  \"total\": {\"allocations\": %ld, \"bytes\": %ld, \"peak\": %ld, "
                "\"leaked\": %ld, \"leaked_count\": %ld, \"temporary\": %ld}\n}\n",
                total[0], total[1], total[2], total[3], total[4], total[5]);
}

int main(int argc, char **argv)
{
    if (argc == 2 && std::strcmp(argv[1], "--truth") == 0) {
        truth();
        return 0;
    }
    if (argc != 1)
        return 2;
    leak_objects();
    scratch_site();
    node_site();
    array_site();
    release();
    return 0;
}
