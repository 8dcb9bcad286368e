/* A fixed rate of context switches, for the off-CPU cost benchmark.
 *
 *   switches WARMUP_MS MEASURE_MS [PAIRS]
 *
 * PAIRS pairs of threads (1 by default) pass a token back and forth
 * through pipes, each blocking in read() until the other writes: every
 * hand-off is a switch out. Each thread spins SPIN_NS of work between
 * hand-offs, so the rate is bounded near 1,000 to 10,000 switches per
 * second per pair rather than by the kernel alone. After WARMUP_MS (for
 * the profiler to attach) it counts hand-offs for MEASURE_MS and prints
 * `handoffs N seconds S switches K`: K the switches (voluntary and not) of
 * the whole process in that span, from getrusage. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define SPIN_NS 50000

static volatile int measuring, stop;
static volatile unsigned long handoffs;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void work(void) {
    double until = now() + SPIN_NS / 1e9;
    while (now() < until)
        ;
}

struct side {
    int in, out;
};

static void *player(void *arg) {
    struct side *s = arg;
    char token;
    while (!stop && read(s->in, &token, 1) == 1) {
        work();
        if (measuring)
            __sync_fetch_and_add(&handoffs, 1);
        if (write(s->out, &token, 1) != 1)
            break;
    }
    return NULL;
}

static long switches(void) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_nvcsw + u.ru_nivcsw;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: switches WARMUP_MS MEASURE_MS [PAIRS]\n");
        return 2;
    }
    long warmup = atol(argv[1]), measure = atol(argv[2]);
    int pairs = argc > 3 ? atoi(argv[3]) : 1;
    for (int p = 0; p < pairs; p++) {
        int ab[2], ba[2];
        if (pipe(ab) || pipe(ba))
            return 1;
        static struct side sides[64][2];
        sides[p][0] = (struct side){ba[0], ab[1]};
        sides[p][1] = (struct side){ab[0], ba[1]};
        pthread_t t;
        pthread_create(&t, NULL, player, &sides[p][0]);
        pthread_create(&t, NULL, player, &sides[p][1]);
        char token = 't';
        if (write(ab[1], &token, 1) != 1)
            return 1;
    }
    usleep(warmup * 1000);
    long before = switches();
    double start = now();
    measuring = 1;
    usleep(measure * 1000);
    measuring = 0;
    double seconds = now() - start;
    long after = switches();
    printf("handoffs %lu seconds %.3f switches %ld\n", handoffs, seconds, after - before);
    fflush(stdout);
    stop = 1;
    return 0;
}
