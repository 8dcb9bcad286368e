/*
 * tree: the overhead and aggregation benchmarks' workload. One thread walks
 * a fixed call tree (3 branches x 3 twigs x 3 leaves, 27 leaf functions of
 * unequal cost), so its profile has dozens of distinct stacks five frames
 * deep, and one walk of the tree is a fixed amount of work.
 *
 *   tree count WARMUP_MS MEASURE_MS
 *       Walks for WARMUP_MS (time for a profiler to attach), then counts
 *       the walks done in the next MEASURE_MS, prints
 *       "walks N seconds S cpu C" (C: this process's CPU seconds over the
 *       same span) and exits.
 *   tree run SECONDS
 *       Walks for SECONDS (0: until killed).
 *
 * Build: cc -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o tree tree.c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noinline, noclone))
#else
#define FRAME __attribute__((noinline))
#endif

/* About 4 us of work per unit: a walk (45 units) takes ~0.2 ms. */
#define UNIT 2000UL

volatile uint64_t sink;

/* Called last by every leaf so none is a leaf (see tests/data/burn.c). */
FRAME void publish(uint64_t state) { sink = state; }

/* A serial chain the compiler cannot shortcut: cost linear in n. */
static inline __attribute__((always_inline)) uint64_t spin(uint64_t s, unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

#define LEAF(name, units) \
    FRAME uint64_t name(uint64_t s) { s = spin(s, (units) * UNIT); publish(s); return s; }
#define NODE(name, a, b, c) \
    FRAME uint64_t name(uint64_t s) { return c(b(a(s))); }

LEAF(leaf_aaa, 1) LEAF(leaf_aab, 2) LEAF(leaf_aac, 3)
LEAF(leaf_aba, 1) LEAF(leaf_abb, 1) LEAF(leaf_abc, 1)
LEAF(leaf_aca, 3) LEAF(leaf_acb, 2) LEAF(leaf_acc, 1)
LEAF(leaf_baa, 2) LEAF(leaf_bab, 2) LEAF(leaf_bac, 2)
LEAF(leaf_bba, 1) LEAF(leaf_bbb, 3) LEAF(leaf_bbc, 1)
LEAF(leaf_bca, 1) LEAF(leaf_bcb, 1) LEAF(leaf_bcc, 2)
LEAF(leaf_caa, 3) LEAF(leaf_cab, 1) LEAF(leaf_cac, 1)
LEAF(leaf_cba, 2) LEAF(leaf_cbb, 1) LEAF(leaf_cbc, 2)
LEAF(leaf_cca, 1) LEAF(leaf_ccb, 3) LEAF(leaf_ccc, 1)

NODE(twig_aa, leaf_aaa, leaf_aab, leaf_aac)
NODE(twig_ab, leaf_aba, leaf_abb, leaf_abc)
NODE(twig_ac, leaf_aca, leaf_acb, leaf_acc)
NODE(twig_ba, leaf_baa, leaf_bab, leaf_bac)
NODE(twig_bb, leaf_bba, leaf_bbb, leaf_bbc)
NODE(twig_bc, leaf_bca, leaf_bcb, leaf_bcc)
NODE(twig_ca, leaf_caa, leaf_cab, leaf_cac)
NODE(twig_cb, leaf_cba, leaf_cbb, leaf_cbc)
NODE(twig_cc, leaf_cca, leaf_ccb, leaf_ccc)

NODE(branch_a, twig_aa, twig_ab, twig_ac)
NODE(branch_b, twig_ba, twig_bb, twig_bc)
NODE(branch_c, twig_ca, twig_cb, twig_cc)

NODE(walk, branch_a, branch_b, branch_c)

static double seconds_of(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double now(void) { return seconds_of(CLOCK_MONOTONIC); }

static uint64_t walk_until(uint64_t s, double until, unsigned long *walks)
{
    while (until <= 0 || now() < until) {
        s = walk(s);
        ++*walks;
    }
    return s;
}

int main(int argc, char **argv)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    unsigned long walks = 0;
    if (argc == 4 && strcmp(argv[1], "count") == 0) {
        double warmup = atof(argv[2]) / 1000.0, measure = atof(argv[3]) / 1000.0;
        double start = now();
        s = walk_until(s, start + warmup, &walks);
        walks = 0;
        double from = now(), cpu_from = seconds_of(CLOCK_PROCESS_CPUTIME_ID);
        s = walk_until(s, from + measure, &walks);
        printf("walks %lu seconds %.6f cpu %.6f\n", walks, now() - from,
               seconds_of(CLOCK_PROCESS_CPUTIME_ID) - cpu_from);
        return (int)(s & 1) * 0;
    }
    if (argc == 3 && strcmp(argv[1], "run") == 0) {
        double seconds = atof(argv[2]);
        s = walk_until(s, seconds > 0 ? now() + seconds : 0, &walks);
        return (int)(s & 1) * 0;
    }
    fprintf(stderr, "usage: tree count WARMUP_MS MEASURE_MS | tree run SECONDS\n");
    return 2;
}
