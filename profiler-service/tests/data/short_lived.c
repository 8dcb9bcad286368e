/*
 * short_lived: a process that burns MS milliseconds of CPU in
 * short_lived_spin and exits, for the per-CPU sampling test's loop of
 * short processes; with MS = 0 it sleeps SLEEP seconds instead (a process
 * of the same name that is always there, for the profile to start on).
 *
 * Build: cc -O2 -fomit-frame-pointer -o odpshortlived short_lived.c
 * (no frame pointers: its callers are found by DWARF unwinding only)
 * Run:   ./odpshortlived MS [SLEEP]
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

volatile uint64_t sink;

__attribute__((noinline)) void publish(uint64_t state) { sink = state; }

static double cpu_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

__attribute__((noinline)) void short_lived_spin(double ms)
{
    uint64_t s = 1;
    double end = cpu_ms() + ms;
    while (cpu_ms() < end) {
        for (int i = 0; i < 10000; i++) {
            s = s * 6364136223846793005ULL + 1442695040888963407ULL;
            s ^= s >> 29;
        }
        publish(s);
    }
}

int main(int argc, char **argv)
{
    double ms = argc > 1 ? atof(argv[1]) : 50;
    if (ms <= 0) {
        sleep(argc > 2 ? atoi(argv[2]) : 30);
        return 0;
    }
    short_lived_spin(ms);
    return 0;
}
