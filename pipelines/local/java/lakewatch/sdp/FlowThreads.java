package lakewatch.sdp;

import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.spark.sql.pipelines.graph.FlowExecution$;

/**
 * SDP's flows at work in this JVM, for the recovery of an update whose runner died
 * (pipelines/local/recovery.py), which calls it through SQL's {@code reflect}.
 *
 * <p>Every flow of every pipeline run of the JVM runs on SDP's one flow thread pool ({@code
 * FlowExecution$.threadPool}). Stopping a run stops its streams and cancels its batch flows' writes
 * ({@link PipelineRuns}), but a flow thread can still be at work (a write that reached its commit, a
 * write's job started after the one cancel a recovery makes, or a run that was interrupted rather
 * than stopped): the recovery waits for those before it reads what the run left and before the next
 * update starts.
 */
public final class FlowThreads {
    private static final long LOOK_MILLIS = 50L;

    private FlowThreads() {}

    /** How many flows SDP's flow thread pool is running now (approximate, as the pool counts). */
    public static int running() {
        ThreadPoolExecutor pool = FlowExecution$.MODULE$.org$apache$spark$sql$pipelines$graph$FlowExecution$$threadPool();
        return pool.getActiveCount();
    }

    /**
     * Waits until SDP runs no flow, or {@code timeoutMillis} have passed; returns how many flows still
     * run (0: none).
     */
    public static int awaitIdle(long timeoutMillis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        int running = running();
        while (running > 0 && System.nanoTime() < deadline) {
            Thread.sleep(LOOK_MILLIS);
            running = running();
        }
        return running;
    }
}
