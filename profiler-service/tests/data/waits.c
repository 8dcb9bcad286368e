/* Threads that wait, for the off-CPU and wall profiles' tests.
 *
 *   waits mutex SECONDS   four threads take one mutex around a short
 *                         critical section (critical_section, under
 *                         take_lock): most of their time is spent blocked
 *                         in pthread_mutex_lock, and their CPU time in the
 *                         critical section.
 *   waits sleep SECONDS   one thread burns the CPU (burn), one sleeps in
 *                         10 ms naps (nap): on CPU the burner is all there
 *                         is, in wall time each holds half.
 *
 * Built without frame pointers, so callers are found by DWARF unwinding. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;
static volatile int stop;

__attribute__((noinline)) void critical_section(void) {
    for (int i = 0; i < 20000; i++)
        counter++;
}

__attribute__((noinline)) void take_lock(void) {
    pthread_mutex_lock(&lock);
    critical_section();
    pthread_mutex_unlock(&lock);
}

static void *contender(void *arg) {
    (void)arg;
    while (!stop)
        take_lock();
    return NULL;
}

__attribute__((noinline)) void burn(void) {
    while (!stop)
        counter++;
}

__attribute__((noinline)) void nap(void) {
    struct timespec ten_ms = {0, 10 * 1000 * 1000};
    while (!stop)
        nanosleep(&ten_ms, NULL);
}

static void *burner(void *arg) {
    (void)arg;
    burn();
    return NULL;
}

static void *napper(void *arg) {
    (void)arg;
    nap();
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: waits mutex|sleep SECONDS\n");
        return 2;
    }
    int seconds = atoi(argv[2]);
    pthread_t threads[4];
    int n = 0;
    if (strcmp(argv[1], "mutex") == 0) {
        for (; n < 4; n++)
            pthread_create(&threads[n], NULL, contender, NULL);
    } else if (strcmp(argv[1], "sleep") == 0) {
        pthread_create(&threads[n++], NULL, burner, NULL);
        pthread_create(&threads[n++], NULL, napper, NULL);
    } else {
        fprintf(stderr, "unknown mode %s\n", argv[1]);
        return 2;
    }
    sleep(seconds);
    stop = 1;
    for (int i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    return 0;
}
