/*
 * rule_workloads: native workloads for the seed detection rules' golden
 * captures (tests/rule_captures.rs). Each mode spends nearly all its CPU
 * in the glibc code one `native-*` rule is about, except `burn`, which
 * calls into no library at all.
 *
 * Build: cc -O2 -pthread -fno-omit-frame-pointer -o rule_workloads rule_workloads.c
 * Run:   ./rule_workloads MODE SECONDS
 *
 * Modes:
 *   lock    four threads taking turns on one pthread mutex around a
 *           critical section a few instructions long
 *   malloc  malloc and free of many small blocks of varying sizes
 *   memcpy  memcpy between two 256 KiB buffers
 *   burn    integer arithmetic only
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FRAME __attribute__((noinline))
#define THREADS 4
#define BLOCKS 256
#define COPY_BYTES (256 * 1024)

static volatile uint64_t sink;
static volatile int running = 1;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t shared_counter;

FRAME static void *contend(void *arg)
{
    (void)arg;
    while (running) {
        pthread_mutex_lock(&lock);
        shared_counter++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

FRAME static void lock_mode(unsigned seconds)
{
    pthread_t threads[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&threads[i], NULL, contend, NULL);
    struct timespec duration = {.tv_sec = seconds};
    nanosleep(&duration, NULL);
    running = 0;
    for (int i = 0; i < THREADS; i++)
        pthread_join(threads[i], NULL);
    sink = shared_counter;
}

FRAME static void allocate_round(uint64_t round)
{
    void *blocks[BLOCKS];
    for (int i = 0; i < BLOCKS; i++)
        blocks[i] = malloc(16 + ((round + (uint64_t)i * 37) % 1024));
    for (int i = 0; i < BLOCKS; i++)
        free(blocks[(i * 7) % BLOCKS]);
}

FRAME static void copy_round(char *to, const char *from, size_t n)
{
    memcpy(to, from, n);
    sink += (unsigned char)to[n / 2];
}

FRAME static uint64_t burn_round(uint64_t s)
{
    for (int i = 0; i < 100000; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s lock|malloc|memcpy|burn [SECONDS]\n", argv[0]);
        return 2;
    }
    const char *mode = argv[1];
    unsigned seconds = argc > 2 ? (unsigned)atoi(argv[2]) : 60;
    if (strcmp(mode, "lock") == 0) {
        lock_mode(seconds);
        return 0;
    }
    char *from = malloc(COPY_BYTES), *to = malloc(COPY_BYTES);
    memset(from, 7, COPY_BYTES);
    double end = now() + seconds;
    uint64_t state = 1;
    while (now() < end) {
        for (int i = 0; i < 100; i++, state++) {
            if (strcmp(mode, "malloc") == 0)
                allocate_round(state);
            else if (strcmp(mode, "memcpy") == 0)
                copy_round(to, from, COPY_BYTES - (state % 64));
            else if (strcmp(mode, "burn") == 0)
                state = burn_round(state);
            else {
                fprintf(stderr, "unknown mode %s\n", mode);
                return 2;
            }
        }
    }
    sink += state;
    free(from);
    free(to);
    return 0;
}
