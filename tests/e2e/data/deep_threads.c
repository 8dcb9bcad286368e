/*
 * deep_threads: the largest window a profile can produce. THREADS threads
 * each descend a random path, DEPTH calls deep, through 16 functions that
 * call one another, burn a little CPU at the bottom and start again. Almost
 * every sample is a stack of its own, about DEPTH frames deep: the worst
 * case for the size of a window's snapshot.
 *
 * Build: cc -O1 -pthread -fno-omit-frame-pointer -fno-optimize-sibling-calls
 *        -o deep_threads deep_threads.c
 * Run:   ./deep_threads THREADS DEPTH SECONDS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noinline, noclone))
#else
#define FRAME __attribute__((noinline))
#endif

typedef uint64_t (*step_fn)(int depth, uint64_t *rng);
static step_fn steps[16];
static volatile uint64_t sink;
static int max_depth;

static uint64_t next(uint64_t *rng) {
    *rng ^= *rng << 13;
    *rng ^= *rng >> 7;
    *rng ^= *rng << 17;
    return *rng;
}

static FRAME uint64_t bottom(uint64_t *rng) {
    uint64_t x = *rng;
    for (int i = 0; i < 2000; i++) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return x;
}

#define STEP(n)                                                          \
    static FRAME uint64_t step_##n(int depth, uint64_t *rng) {           \
        if (depth >= max_depth) return bottom(rng) + n;                  \
        uint64_t r = steps[next(rng) & 15](depth + 1, rng);              \
        return r ^ (uint64_t)n;                                          \
    }
STEP(0) STEP(1) STEP(2) STEP(3) STEP(4) STEP(5) STEP(6) STEP(7)
STEP(8) STEP(9) STEP(10) STEP(11) STEP(12) STEP(13) STEP(14) STEP(15)

static double deadline;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *walk(void *arg) {
    uint64_t rng = 0x9e3779b97f4a7c15ULL ^ (uintptr_t)arg;
    while (now() < deadline) sink += steps[next(&rng) & 15](0, &rng);
    return NULL;
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 8;
    max_depth = argc > 2 ? atoi(argv[2]) : 100;
    deadline = now() + (argc > 3 ? atof(argv[3]) : 30);
    step_fn all[16] = {step_0, step_1, step_2,  step_3,  step_4,  step_5,  step_6,  step_7,
                       step_8, step_9, step_10, step_11, step_12, step_13, step_14, step_15};
    for (int i = 0; i < 16; i++) steps[i] = all[i];
    pthread_t ids[256];
    if (threads < 1 || threads > 256) return 2;
    for (int i = 0; i < threads; i++) pthread_create(&ids[i], NULL, walk, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < threads; i++) pthread_join(ids[i], NULL);
    return 0;
}
