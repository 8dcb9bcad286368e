import java.util.List;
import java.util.UUID;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * JVM workloads for the `lock` profile mode (tests/jvm_lock.rs and the
 * lock captures of tests/rule_captures.rs): threads that wait for one
 * another, each mode in its own way.
 *
 * <pre>java LockWorkloads MODE THREADS SECONDS</pre>
 *
 * Modes:
 * monitor    THREADS threads take turns on one `synchronized` block
 *            (monitor class LockWorkloads$Ledger), each holding it for
 *            HOLD_MS without using CPU: at any moment one holds it and
 *            the others are blocked entering it, so the threads wait
 *            (THREADS - 1) seconds per second between them.
 * reentrant  the same on a fair ReentrantLock: the waiters park, their
 *            park blocker is the lock's ReentrantLock$FairSync. (Fair, so
 *            that every wait lasts about (THREADS - 1) * HOLD_MS: an
 *            unfair lock lets a thread wait most of a second while the
 *            others barge past it, and the waits a profile's end cuts
 *            short go unrecorded.)
 * uuid       THREADS threads calling UUID.randomUUID as fast as they can,
 *            all drawing from the JDK's one shared SecureRandom
 *            (NativePRNG, whose mixing generator and buffer are guarded
 *            by monitors): the ODP paper's case study.
 * idle       no contention: THREADS workers wait for work on queues of
 *            their own, which the main thread fills in turn, an item every
 *            20 ms (they park on their queue's condition), and each takes
 *            a lock of its own, which no other thread wants.
 */
public class LockWorkloads {
    static final long HOLD_MS = 5;
    static volatile long sink;

    /** The monitor of `monitor`: a class of its own, so the lock profile
     * can be checked to name it. */
    static final class Ledger {
        long entries;
    }

    static final Ledger LEDGER = new Ledger();

    static void record() throws InterruptedException {
        synchronized (LEDGER) {
            LEDGER.entries++;
            Thread.sleep(HOLD_MS);
        }
    }

    static final ReentrantLock LOCK = new ReentrantLock(true);

    static void recordLocked() throws InterruptedException {
        LOCK.lock();
        try {
            sink++;
            Thread.sleep(HOLD_MS);
        } finally {
            LOCK.unlock();
        }
    }

    static void newIds() {
        long bits = 0;
        for (int i = 0; i < 1000; i++) {
            bits ^= UUID.randomUUID().getLeastSignificantBits();
        }
        sink += bits;
    }

    static final ThreadLocal<BlockingQueue<Long>> WORK =
            ThreadLocal.withInitial(() -> new ArrayBlockingQueue<>(1024));
    static final List<BlockingQueue<Long>> QUEUES = new CopyOnWriteArrayList<>();

    static void awaitWork() throws InterruptedException {
        Long item = WORK.get().poll(100, TimeUnit.MILLISECONDS);
        if (item != null) {
            ReentrantLock own = OWN.get();
            own.lock();
            try {
                sink += item;
            } finally {
                own.unlock();
            }
        }
    }

    static final ThreadLocal<ReentrantLock> OWN = ThreadLocal.withInitial(ReentrantLock::new);

    static void step(String mode) throws InterruptedException {
        switch (mode) {
            case "monitor": record(); break;
            case "reentrant": recordLocked(); break;
            case "uuid": newIds(); break;
            case "idle": awaitWork(); break;
            default: throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    static void work(String mode, long end) {
        try {
            while (System.nanoTime() < end) {
                step(mode);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** A named class rather than a lambda, whose frame would carry the
     * address of its hidden class. */
    static final class Worker extends Thread {
        final String mode;
        final long end;

        Worker(String mode, long end, String name) {
            super(name);
            this.mode = mode;
            this.end = end;
        }

        @Override
        public void run() {
            if (mode.equals("idle")) {
                QUEUES.add(WORK.get());
            }
            work(mode, end);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        String mode = args[0];
        int threads = Integer.parseInt(args[1]);
        long seconds = Long.parseLong(args[2]);
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        Thread[] workers = new Thread[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker(mode, end, "worker-" + i);
            workers[i].start();
        }
        if (mode.equals("idle")) {
            for (long i = 0; System.nanoTime() < end; i++) {
                if (!QUEUES.isEmpty()) {
                    QUEUES.get((int) (i % QUEUES.size())).offer(i);
                }
                Thread.sleep(20);
            }
        }
        for (Thread worker : workers) {
            worker.join();
        }
        System.out.println(sink);
    }
}
