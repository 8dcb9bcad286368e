/*
 * burn: a CPU burner whose time splits 75% / 25% between burn_hot and
 * burn_cold, for the agent's live sampling test.
 *
 * Build: cc -O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o burn burn.c
 * Run:   ./burn SECONDS
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noinline, noclone))
#else
#define FRAME __attribute__((noinline))
#endif

#define UNIT 100000UL

volatile uint64_t sink;

/*
 * Each burner ends with a call here so it is not a leaf: GCC omits a leaf's
 * frame pointer even with -mno-omit-leaf-frame-pointer, and the kernel's
 * frame-pointer unwinder would then skip main.
 */
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

FRAME uint64_t burn_hot(uint64_t s) { s = spin(s, 3 * UNIT); publish(s); return s; }
FRAME uint64_t burn_cold(uint64_t s) { s = spin(s, 1 * UNIT); publish(s); return s; }

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 10.0;
    double deadline = now() + seconds;
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    while (now() < deadline) {
        s = burn_hot(s);
        s = burn_cold(s);
    }
    return (int)(s & 1) * 0;
}
