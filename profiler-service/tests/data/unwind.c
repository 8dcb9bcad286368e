/*
 * unwind: a known call chain main -> outer -> middle -> leaf with the CPU
 * time in leaf, for the agent's DWARF unwinding test. Built without frame
 * pointers, so the kernel's frame-pointer call chains lose the callers and
 * only .eh_frame unwinding finds them.
 *
 * Build: cc -O2 -fomit-frame-pointer -fno-inline -fno-optimize-sibling-calls -o unwind unwind.c
 * Run:   ./unwind SECONDS
 */
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
FRAME uint64_t leaf(uint64_t s)
{
    for (unsigned long i = 0; i < 200000UL; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

/* Work after each call keeps it a real call, not a tail jump, so every
 * caller stays on the stack. */
FRAME uint64_t middle(uint64_t s)
{
    uint64_t r = leaf(s ^ 0x5bd1e995ULL);
    sink = r;
    return r * 3 + 1;
}

FRAME uint64_t outer(uint64_t s)
{
    uint64_t r = middle(s + 17);
    sink = r;
    return r ^ (r >> 7);
}

int main(int argc, char **argv)
{
    /* SIGALRM's default action ends the process when the time is up. */
    alarm(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
    uint64_t s = 88172645463325252ULL;
    for (;;)
        s = outer(s);
}
