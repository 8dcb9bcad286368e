import java.util.ArrayList;
import java.util.List;

/**
 * A live JVM workload for the heap-bytes tests: it allocates 300,000
 * Retained objects (about 80 bytes each, some 24 MB) and holds them in a
 * static list, so they stay live and come first in a class histogram, then
 * keeps allocating short-lived garbage. Runs for the number of seconds
 * given as its first argument.
 */
public class HeapHolder {
    static final class Retained {
        long a, b, c, d, e, f, g, h;

        Retained(long seed) {
            a = seed;
            h = seed * 31;
        }
    }

    static final List<Retained> HELD = new ArrayList<>();
    static long sink;

    public static void main(String[] args) throws InterruptedException {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 60;
        for (int i = 0; i < 300_000; i++) {
            HELD.add(new Retained(i));
        }
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            StringBuilder garbage = new StringBuilder();
            for (int i = 0; i < 1_000; i++) {
                garbage.append(i);
            }
            sink += garbage.length() + HELD.size();
            Thread.sleep(10);
        }
        System.out.println(sink);
    }
}
