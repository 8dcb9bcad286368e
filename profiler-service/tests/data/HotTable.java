import java.util.Hashtable;
import java.util.UUID;

/**
 * A live JVM workload for the agent's jvm plugin tests: its hot path fills
 * a java.util.Hashtable with random UUIDs (fillTable, about nine tenths of
 * the CPU), and a cold path sums integers (sumSquares). Runs for the number
 * of seconds given as its first argument.
 */
public class HotTable {
    static long sink;

    static int fillTable(int n) {
        Hashtable<String, UUID> table = new Hashtable<>();
        for (int i = 0; i < n; i++) {
            UUID id = UUID.randomUUID();
            table.put(id.toString(), id);
        }
        return table.size();
    }

    static long sumSquares(int n) {
        long total = 0;
        for (int i = 0; i < n; i++) {
            total += (long) i * i % 7;
        }
        return total;
    }

    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 60;
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            sink += fillTable(20_000);
            sink += sumSquares(300_000);
        }
        System.out.println(sink);
    }
}
