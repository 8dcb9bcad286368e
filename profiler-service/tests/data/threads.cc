/*
 * threads.cc: CPU burnt in two std::thread workers and the main thread,
 * for the test of the frames libstdc++ and libc put under every worker:
 * clone3 > start_thread > execute_native_thread_routine (libstdc++'s
 * thread entry, a local function: named only where libstdc++'s debug file
 * is installed, else shown as its module) > the thread's _M_run. Built
 * without frame pointers, so the stacks come from DWARF unwinding.
 *
 * Build: c++ -O2 -pthread -fomit-frame-pointer -fno-optimize-sibling-calls -o threads-cc threads.cc
 * Run:   ./threads-cc SECONDS
 */
#include <cstdint>
#include <cstdlib>
#include <thread>
#include <vector>

#include <unistd.h>

volatile std::uint64_t sink;

/* A serial chain the compiler cannot shortcut. */
__attribute__((noinline)) std::uint64_t spin(std::uint64_t s)
{
    for (unsigned long i = 0; i < 200000UL; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

__attribute__((noinline)) void worker(std::uint64_t s)
{
    for (;;)
        sink = s = spin(s);
}

int main(int argc, char **argv)
{
    // SIGALRM's default action ends the process when the time is up.
    alarm(argc > 1 ? static_cast<unsigned>(std::atoi(argv[1])) : 30);
    std::vector<std::thread> workers;
    for (std::uint64_t i = 1; i <= 2; i++)
        workers.emplace_back(worker, i);
    worker(0);
}
