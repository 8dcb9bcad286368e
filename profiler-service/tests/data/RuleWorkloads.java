import java.security.SecureRandom;
import java.util.Hashtable;
import java.util.UUID;
import java.util.concurrent.ForkJoinPool;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * JVM workloads for the seed detection rules' golden captures
 * (tests/rule_captures.rs): each mode spends nearly all its CPU in the
 * JDK code one `jvm-*` rule is about, except `burn`, which touches none
 * of it. Log4j 1 has its own program, Log4jCategory.java.
 *
 * <pre>java RuleWorkloads MODE SECONDS</pre>
 *
 * Modes:
 * uuid          UUID.randomUUID
 * forkjoin      a ForkJoinPool whose workers go idle between bursts of tiny
 *               tasks
 * securerandom  SecureRandom.nextBytes on one shared generator
 * hashtable     a Hashtable copied (putAll) and read
 * throwable     exceptions created (and dropped) a few calls deep, on two
 *               threads
 * regex         a Pattern compiled for every match
 * stringbuffer  StringBuffer.append and toString
 * burn          integer arithmetic only
 */
public class RuleWorkloads {
    static volatile long sink;

    static long uuid() {
        long bits = 0;
        for (int i = 0; i < 1000; i++) {
            bits ^= UUID.randomUUID().getLeastSignificantBits();
        }
        return bits;
    }

    static final ForkJoinPool POOL = new ForkJoinPool(4);

    /** Bursts of tiny tasks: the workers drain each burst faster than it
     * comes, and go back to waiting for work in between. */
    static long forkJoin() {
        for (int i = 0; i < 1000; i++) {
            POOL.execute(RuleWorkloads::tinyTask);
        }
        for (int i = 0; i < 2000; i++) {
            Thread.onSpinWait();
        }
        return 1;
    }

    static void tinyTask() {
        sink += 1;
    }

    static final SecureRandom RANDOM = new SecureRandom();

    static long secureRandom() {
        byte[] bytes = new byte[64];
        long total = 0;
        for (int i = 0; i < 1000; i++) {
            RANDOM.nextBytes(bytes);
            total += bytes[i % 64];
        }
        return total;
    }

    static final Hashtable<Integer, Integer> SOURCE = new Hashtable<>();

    static {
        for (int i = 0; i < 4096; i++) {
            SOURCE.put(i, i);
        }
    }

    /** A shared table copied and read, as caches built on Hashtable are. */
    static long hashtable() {
        Hashtable<Integer, Integer> copy = new Hashtable<>(SOURCE);
        long total = 0;
        for (int i = 0; i < 4096; i++) {
            total += copy.get((i * 7) & 4095);
        }
        return total;
    }

    static Exception fail(int depth) {
        return depth == 0 ? new IllegalStateException("no") : fail(depth - 1);
    }

    static long throwable() {
        long total = 0;
        for (int i = 0; i < 1000; i++) {
            total += fail(i % 4).getMessage().length();
        }
        return total;
    }

    static final String[] PATTERNS = {"(\\w+)=(\\d+)", "(\\w+):(\\d+)", "(\\w+)-(\\d+)"};

    /** A pattern compiled for every use, as String.split and matches do. */
    static long regex() {
        long total = 0;
        for (int i = 0; i < 1000; i++) {
            Matcher matcher = Pattern.compile(PATTERNS[i % 3]).matcher("alpha=1");
            total += matcher.matches() ? 1 : 0;
        }
        return total;
    }

    static long stringBuffer() {
        long total = 0;
        for (int i = 0; i < 1000; i++) {
            StringBuffer buffer = new StringBuffer();
            for (int j = 0; j < 20; j++) {
                buffer.append("item").append(j).append(',');
            }
            total += buffer.toString().length();
        }
        return total;
    }

    static long burn() {
        long total = 0;
        for (int i = 0; i < 1_000_000; i++) {
            total += (long) i * i % 7;
        }
        return total;
    }

    static long step(String mode) {
        switch (mode) {
            case "uuid": return uuid();
            case "forkjoin": return forkJoin();
            case "securerandom": return secureRandom();
            case "hashtable": return hashtable();
            case "throwable": return throwable();
            case "regex": return regex();
            case "stringbuffer": return stringBuffer();
            case "burn": return burn();
            default: throw new IllegalArgumentException("unknown mode " + mode);
        }
    }

    static void run(String mode, long end) {
        while (System.nanoTime() < end) {
            sink += step(mode);
        }
    }

    public static void main(String[] args) throws InterruptedException {
        String mode = args[0];
        long seconds = args.length > 1 ? Long.parseLong(args[1]) : 60;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        // Creating exceptions is mostly the VM's stack walk, where JFR does
        // not sample; from one thread it sees next to nothing once the JIT
        // is done, from two a few samples in every ten.
        Thread second = null;
        if (mode.equals("throwable")) {
            second = new Thread(() -> run(mode, end), "second");
            second.start();
        }
        run(mode, end);
        if (second != null) {
            second.join();
        }
        System.out.println(sink);
    }
}
