/*
 * jit: a stand-in for a JIT compiler. It writes a small hot loop into an
 * anonymous executable page, names it jit_hot_loop in /tmp/perf-PID.map as
 * JITs do for perf, and calls it until the time is up; for the agent's perf
 * map test. The code is x86-64 machine code.
 *
 * Build: cc -O2 -o jit jit.c
 * Run:   ./jit SECONDS
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* uint64_t jit_hot_loop(uint64_t n): sums n, n-1, ..., 1 (n > 0). */
static const unsigned char code[] = {
    0x48, 0x89, 0xf9,       /* mov  rcx, rdi */
    0x31, 0xc0,             /* xor  eax, eax */
    0x48, 0x01, 0xc8,       /* 1: add rax, rcx */
    0x48, 0xff, 0xc9,       /* dec  rcx */
    0x75, 0xf8,             /* jnz  1b */
    0xc3,                   /* ret */
};

volatile uint64_t sink;

int main(int argc, char **argv)
{
    /* SIGALRM's default action ends the process when the time is up. */
    alarm(argc > 1 ? (unsigned)atoi(argv[1]) : 30);
    long page = sysconf(_SC_PAGESIZE);
    unsigned char *mem = mmap(NULL, page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return 1;
    /* Past the page start, as a JIT's code rarely starts a mapping. */
    unsigned char *fn = mem + 64;
    memcpy(fn, code, sizeof code);
    if (mprotect(mem, page, PROT_READ | PROT_EXEC) != 0)
        return 1;

    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)getpid());
    FILE *map = fopen(path, "w");
    if (!map)
        return 1;
    /* A malformed line first: the agent must skip it, not give up. */
    fprintf(map, "not a perf map line\n");
    fprintf(map, "%lx %zx jit_hot_loop\n", (unsigned long)(uintptr_t)fn, sizeof code);
    fclose(map);

    uint64_t (*hot)(uint64_t) = (uint64_t (*)(uint64_t))(void *)fn;
    for (uint64_t n = 2000000;; n++)
        sink += hot(n);
}
