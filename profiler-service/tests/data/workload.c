/*
 * workload: the cost-control tests' and benchmarks' target.
 *
 *   workload threads SECONDS BUSY IDLE [SPIN_US PERIOD_MS]
 *       BUSY threads burn the CPU in busy_work, which serves "requests":
 *       each a call to one of 64 handlers, handler k chosen with weight
 *       1/(k+1), so a profile has 50+ hot functions with shares from 21 %
 *       down to 0.3 % (the top-50 FSP's error is measured on); IDLE threads wake every
 *       PERIOD_MS (default 100), spin SPIN_US (default 300) in idle_tick and
 *       sleep again (the idle daemons FSP prunes). Threads are named busy-N
 *       and idle-N.
 *   workload pool SECONDS BUSY IDLE SPIN_US PERIOD_MS
 *       The same, but the idle threads wake into busy_work too: a thread
 *       pool whose few hot workers and many rarely woken ones run the same
 *       code, the services Atys measured FSP's error on.
 *   workload phases SECONDS PHASE_MS
 *       One thread whose hot functions change every PHASE_MS: phase A
 *       splits 75/25 between phase_a_main and phase_a_side, phase B 75/25
 *       between phase_b_main and phase_b_side (the changes FDA follows).
 *       Prints "start_ms MS", then every 100 ms "cpu WALL_MS A_NS B_NS":
 *       the thread CPU time spent so far in each phase, the instrumented
 *       truth the FDA benchmark measures profiles against.
 *
 * Build: cc -O2 -pthread -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -o workload workload.c
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__GNUC__) && !defined(__clang__)
#define FRAME __attribute__((noinline, noclone))
#else
#define FRAME __attribute__((noinline))
#endif

#define UNIT 20000UL

volatile uint64_t sink;
static double deadline;
static double idle_spin_s = 0.0003;
static int idle_runs_busy_work = 0;
static long idle_period_ns = 100L * 1000 * 1000;

/* Called last by every burner so none is a leaf (see burn.c). */
FRAME void publish(uint64_t state) { sink = state; }

static inline __attribute__((always_inline)) uint64_t spin(uint64_t s, unsigned long n)
{
    for (unsigned long i = 0; i < n; i++) {
        s = s * 6364136223846793005ULL + 1442695040888963407ULL;
        s ^= s >> 29;
    }
    return s;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define HANDLERS 64
#define HANDLER(k) \
    FRAME uint64_t handler_##k(uint64_t s) { s = spin(s, UNIT / 8); publish(s); return s; }
#define HANDLERS8(k) HANDLER(k##0) HANDLER(k##1) HANDLER(k##2) HANDLER(k##3) \
    HANDLER(k##4) HANDLER(k##5) HANDLER(k##6) HANDLER(k##7)
HANDLERS8(0) HANDLERS8(1) HANDLERS8(2) HANDLERS8(3)
HANDLERS8(4) HANDLERS8(5) HANDLERS8(6) HANDLERS8(7)
#define REF8(k) handler_##k##0, handler_##k##1, handler_##k##2, handler_##k##3, \
    handler_##k##4, handler_##k##5, handler_##k##6, handler_##k##7
static uint64_t (*const handlers[HANDLERS])(uint64_t) = {
    REF8(0), REF8(1), REF8(2), REF8(3), REF8(4), REF8(5), REF8(6), REF8(7)};
/* Cumulative weights of 1/(k+1), scaled to 2^32. */
static uint64_t handler_cdf[HANDLERS];

static void init_handlers(void)
{
    double sum = 0, acc = 0;
    for (int k = 0; k < HANDLERS; k++)
        sum += 1.0 / (k + 1);
    for (int k = 0; k < HANDLERS; k++) {
        acc += 1.0 / (k + 1) / sum;
        handler_cdf[k] = (uint64_t)(acc * 4294967296.0);
    }
    handler_cdf[HANDLERS - 1] = UINT64_MAX;
}

/* Serves 8 requests, each by the handler its draw from the state picks. */
FRAME uint64_t busy_work(uint64_t s)
{
    for (int i = 0; i < 8; i++) {
        uint64_t draw = (s * 0x9e3779b97f4a7c15ULL) >> 32;
        int k = 0;
        while (draw >= handler_cdf[k])
            k++;
        s = handlers[k](s + (uint64_t)i);
    }
    publish(s);
    return s;
}
FRAME uint64_t idle_tick(uint64_t s) { s = spin(s, UNIT); publish(s); return s; }

FRAME uint64_t phase_a_main(uint64_t s) { s = spin(s, 3 * UNIT); publish(s); return s; }
FRAME uint64_t phase_a_side(uint64_t s) { s = spin(s, UNIT); publish(s); return s; }
FRAME uint64_t phase_b_main(uint64_t s) { s = spin(s, 3 * UNIT); publish(s); return s; }
FRAME uint64_t phase_b_side(uint64_t s) { s = spin(s, UNIT); publish(s); return s; }

static void *busy(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    while (now() < deadline)
        s = busy_work(s);
    return NULL;
}

static void *idle(void *arg)
{
    uint64_t s = (uint64_t)(uintptr_t)arg;
    struct timespec pause = {idle_period_ns / 1000000000L, idle_period_ns % 1000000000L};
    /* Spread the wake-ups over the period. */
    long offset_ns = (long)((uintptr_t)arg * 7919 % 1000) * (idle_period_ns / 1000);
    struct timespec offset = {offset_ns / 1000000000L, offset_ns % 1000000000L};
    nanosleep(&offset, NULL);
    while (now() < deadline) {
        double until = now() + idle_spin_s;
        while (now() < until)
            s = idle_runs_busy_work ? busy_work(s) : idle_tick(s);
        nanosleep(&pause, NULL);
    }
    return NULL;
}

static int threads(int busy_n, int idle_n)
{
    int n = busy_n + idle_n;
    pthread_t *ids = calloc((size_t)n, sizeof *ids);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    for (int i = 0; i < n; i++) {
        char name[16];
        int is_busy = i < busy_n;
        snprintf(name, sizeof name, "%s-%d", is_busy ? "busy" : "idle", is_busy ? i : i - busy_n);
        if (pthread_create(&ids[i], &attr, is_busy ? busy : idle, (void *)(uintptr_t)(i + 1)) != 0) {
            perror("pthread_create");
            return 1;
        }
        pthread_setname_np(ids[i], name);
    }
    for (int i = 0; i < n; i++)
        pthread_join(ids[i], NULL);
    free(ids);
    return 0;
}

static long long wall_ms(void)
{
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    return (long long)wall.tv_sec * 1000 + wall.tv_nsec / 1000000;
}

static long long thread_cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int phases(double phase_s)
{
    uint64_t s = 0x9e3779b97f4a7c15ULL;
    double start = now();
    double next_report = start;
    /* CPU time per phase: wall time would count the time the scheduler
     * gave to others on a loaded machine. */
    long long cpu[2] = {0, 0};
    long long last_cpu = thread_cpu_ns();
    printf("start_ms %lld\n", wall_ms());
    fflush(stdout);
    while (now() < deadline) {
        int b = ((long)((now() - start) / phase_s)) % 2;
        if (b) {
            s = phase_b_main(s);
            s = phase_b_side(s);
        } else {
            s = phase_a_main(s);
            s = phase_a_side(s);
        }
        long long cpu_now = thread_cpu_ns();
        cpu[b] += cpu_now - last_cpu;
        last_cpu = cpu_now;
        if (now() >= next_report) {
            printf("cpu %lld %lld %lld\n", wall_ms(), cpu[0], cpu[1]);
            fflush(stdout);
            next_report += 0.1;
        }
    }
    return (int)(s & 1) * 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: workload threads SECONDS BUSY IDLE | pool SECONDS BUSY IDLE SPIN_US PERIOD_MS | "
                        "phases SECONDS PHASE_MS\n");
        return 2;
    }
    deadline = now() + atof(argv[2]);
    init_handlers();
    if (strcmp(argv[1], "threads") == 0 && (argc == 5 || argc == 7)) {
        if (argc == 7) {
            idle_spin_s = atof(argv[5]) / 1e6;
            idle_period_ns = atol(argv[6]) * 1000L * 1000L;
        }
        return threads(atoi(argv[3]), atoi(argv[4]));
    }
    if (strcmp(argv[1], "pool") == 0 && argc == 7) {
        idle_runs_busy_work = 1;
        idle_spin_s = atof(argv[5]) / 1e6;
        idle_period_ns = atol(argv[6]) * 1000L * 1000L;
        return threads(atoi(argv[3]), atoi(argv[4]));
    }
    if (strcmp(argv[1], "phases") == 0 && argc == 4)
        return phases(atof(argv[3]) / 1000.0);
    fprintf(stderr, "bad arguments\n");
    return 2;
}
