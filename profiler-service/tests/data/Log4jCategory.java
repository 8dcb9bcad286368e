import java.io.Writer;

import org.apache.log4j.Level;
import org.apache.log4j.Logger;
import org.apache.log4j.PatternLayout;
import org.apache.log4j.WriterAppender;

/**
 * The Log4j 1 workload of the seed detection rules' golden captures
 * (tests/rule_captures.rs): events logged through a Logger (a log4j
 * Category) to a pattern-formatting appender whose text is discarded.
 * Needs Log4j 1.2 on the class path (Debian: liblog4j1.2-java,
 * /usr/share/java/log4j-1.2.jar).
 *
 * <pre>java -cp CLASSES:log4j-1.2.jar Log4jCategory SECONDS</pre>
 */
public class Log4jCategory {
    static volatile long sink;

    /** Counts what it is given and keeps none of it. */
    static final class Discard extends Writer {
        @Override
        public void write(char[] buffer, int offset, int length) {
            sink += length;
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    }

    public static void main(String[] args) {
        long seconds = args.length > 0 ? Long.parseLong(args[0]) : 60;
        Logger root = Logger.getRootLogger();
        root.removeAllAppenders();
        root.addAppender(
                new WriterAppender(new PatternLayout("%d{ISO8601} %-5p [%t] %c: %m%n"), new Discard()));
        root.setLevel(Level.INFO);
        Logger log = Logger.getLogger("orders.checkout");
        long end = System.nanoTime() + seconds * 1_000_000_000L;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                log.info("order placed");
            }
        }
        System.out.println(sink);
    }
}
