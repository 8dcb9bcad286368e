/*
 * cpu-split: a demo workload whose CPU time splits about 60% / 30% / 10%
 * between demo_hot, demo_warm and demo_cool, so a profile of it has a known
 * expected shape.
 *
 * Build: cc -O2 -g -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer \
 *           -o cpu-split cpu-split.c
 * Run:   ./cpu-split              (until killed)
 *        ./cpu-split --seconds 30
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * noinline keeps each function a separate frame; noclone (GCC only) stops
 * GCC from emitting specialised copies such as demo_hot.constprop.0, which
 * would show up under a different symbol name in the profile.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define DEMO_FRAME __attribute__((noinline, noclone))
#else
#define DEMO_FRAME __attribute__((noinline))
#endif

/* Iterations of the kernel per share; one round costs 10 units. */
#define UNIT_ITERATIONS 200000UL

/* Every result lands here, so the compiler must compute all of them. */
volatile uint64_t demo_sink;

/*
 * Called at the end of each demo function so that none of them is a leaf.
 * GCC 12 omits the frame pointer of leaf functions even with
 * -mno-omit-leaf-frame-pointer; a leaf without one makes a frame-pointer
 * unwinder skip its caller (main would vanish from the stacks).
 */
DEMO_FRAME void demo_publish(uint64_t state)
{
    demo_sink = state;
}

/*
 * A serial dependency chain (multiply, add, xor-shift): no closed form, no
 * vectorisation, so the cost is linear in the iteration count and the same
 * per iteration in all three callers. always_inline puts the samples in the
 * caller's own frame (self time), not in a shared helper.
 */
static inline __attribute__((always_inline)) uint64_t
mix_rounds(uint64_t state, unsigned long iterations)
{
    for (unsigned long i = 0; i < iterations; i++) {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        state ^= state >> 29;
    }
    return state;
}

DEMO_FRAME uint64_t demo_hot(uint64_t state, unsigned long iterations)
{
    state = mix_rounds(state, iterations);
    demo_publish(state);
    return state;
}

DEMO_FRAME uint64_t demo_warm(uint64_t state, unsigned long iterations)
{
    state = mix_rounds(state, iterations);
    demo_publish(state);
    return state;
}

DEMO_FRAME uint64_t demo_cool(uint64_t state, unsigned long iterations)
{
    state = mix_rounds(state, iterations);
    demo_publish(state);
    return state;
}

static double monotonic_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(const char *program)
{
    fprintf(stderr, "usage: %s [--seconds N]\n", program);
}

int main(int argc, char **argv)
{
    double run_seconds = 0; /* 0 means run until killed */

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--seconds") == 0 && i + 1 < argc) {
            char *end = NULL;
            errno = 0;
            run_seconds = strtod(argv[++i], &end);
            if (errno != 0 || end == argv[i] || *end != '\0' || run_seconds < 0) {
                usage(argv[0]);
                return 2;
            }
        } else {
            usage(argv[0]);
            return 2;
        }
    }

    double deadline = monotonic_seconds() + run_seconds;
    uint64_t state = 0x9e3779b97f4a7c15ULL;
    for (;;) {
        state = demo_hot(state, 6 * UNIT_ITERATIONS);
        state = demo_warm(state, 3 * UNIT_ITERATIONS);
        state = demo_cool(state, 1 * UNIT_ITERATIONS);
        if (run_seconds > 0 && monotonic_seconds() >= deadline)
            break;
    }
    return 0;
}
