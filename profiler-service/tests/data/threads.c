/*
 * threads: CPU burnt in the main thread and in two threads started by
 * pthread_create, for the test that names the libc frames at the root of
 * every stack: clone3 > start_thread for a thread, _start >
 * __libc_start_main > __libc_start_call_main for the main thread. They
 * are local functions of libc, named only by its debug file. Built without
 * frame pointers, as Debian's libc is, so the stacks come from DWARF
 * unwinding.
 *
 * Build: cc -O2 -pthread -fomit-frame-pointer -fno-optimize-sibling-calls -o threads threads.c
 * Run:   ./threads SECONDS
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noinline, noclone))
#else
#define FRAME __attribute__((noinline))
#endif

volatile uint64_t sink;

/* A serial chain the compiler cannot shortcut. */
FRAME uint64_t spin(uint64_t s)
{
    for (unsigned long i = 0; i < 200000UL; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

FRAME void *thread_burn(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    for (;;)
        sink = s = spin(s);
    return NULL;
}

FRAME void main_burn(void)
{
    uint64_t s = 88172645463325252ULL;
    for (;;)
        sink = s = spin(s);
}

int main(int argc, char **argv)
{
    /* SIGALRM's default action ends the process when the time is up. */
    alarm(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
    pthread_t ids[2];
    for (uintptr_t i = 0; i < 2; i++)
        if (pthread_create(&ids[i], NULL, thread_burn, (void *)(i + 1)) != 0)
            return 1;
    main_burn();
    return 0;
}
