package lakewatch.sdp;

import java.util.Collections;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.WeakHashMap;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.spark.SparkContext;
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException;
import org.apache.spark.sql.classic.DataFrameWriter;
import org.apache.spark.sql.classic.Dataset;
import org.apache.spark.sql.classic.SparkSession;
import org.apache.spark.sql.functions;
import org.apache.spark.sql.pipelines.graph.BatchTableWrite;
import org.apache.spark.sql.pipelines.graph.FlowExecution;
import org.apache.spark.sql.pipelines.graph.PipelineUpdateContext;
import org.apache.spark.sql.pipelines.graph.Table;

/**
 * A materialized view's refresh as one Delta commit, as on Databricks (see {@link SdpClasses}).
 *
 * <p>Open-source SDP 4.2 empties every materialized view ({@code TRUNCATE TABLE}) while it sets up
 * tables, and its flow appends the new rows only when it runs, after the flows before it. Meanwhile a
 * reader (an alert, the dashboard, a query) sees the view empty, and a flow that fails leaves it
 * empty. With the two calls below, SDP's table setup leaves a materialized view as it is, and its
 * flow replaces the rows in one overwrite: each committed version of the view is a whole refresh.
 * Streaming tables are left to SDP as before (their full refresh still truncates them).
 */
public final class ViewRefresh {
    private ViewRefresh() {}

    /**
     * Called where {@code DatasetManager.materializeTable} runs {@code TRUNCATE TABLE}: for a full
     * refresh of a streaming table, or for any materialized view. Runs it for the streaming table
     * only; a materialized view keeps its rows until its flow overwrites them.
     */
    public static Dataset<?> truncate(SparkSession spark, String truncateSql, Table table) {
        return table.isStreamingTable() ? spark.sql(truncateSql) : spark.emptyDataFrame();
    }

    /** A batch flow's write under way: its Spark context and the tag its jobs carry. */
    private record TaggedWrite(SparkContext context, String tag) {}

    /** Each batch flow's write under way (see {@link #cancel}). */
    private static final Map<FlowExecution, TaggedWrite> WRITES = new ConcurrentHashMap<>();

    /** The pipeline runs being stopped ({@link PipelineRuns}): their flows write nothing more. */
    private static final Set<PipelineUpdateContext> STOPPING = Collections.synchronizedSet(
        Collections.newSetFromMap(new WeakHashMap<>()));

    /** Marks {@code run} as being stopped: a batch flow of it that starts its write from now on does not write. */
    public static void stopping(PipelineUpdateContext run) {
        STOPPING.add(run);
    }

    /**
     * Called where {@code BatchTableWrite} appends a flow's rows ({@code saveAsTable}, mode append).
     * Into a materialized view the rows replace the view's rows in one commit, columns matched by
     * name as the append matched them; into a streaming table they are appended as before. (A view
     * that is not there fails the flow, as the append did.)
     *
     * <p>The write's Spark jobs carry a tag of their own, so that a stopped flow's write can be
     * cancelled ({@link #cancel}); a flow stopped before its write began does not write.
     */
    public static void saveAsTable(DataFrameWriter<?> writer, String name, BatchTableWrite write, Dataset<?> data)
            throws NoSuchTableException {
        SparkContext context = data.sparkSession().sparkContext();
        String tag = "lakewatch-flow-write-" + UUID.randomUUID();
        WRITES.put(write, new TaggedWrite(context, tag));
        context.addJobTag(tag);
        try {
            if (STOPPING.contains(write.updateContext())) {
                // A flow the scheduler started as its run was being stopped. Flagged stopped, SDP ends it
                // STOPPED, as it ends a stopped flow whose write failed.
                write.stop();
            }
            if (write.org$apache$spark$sql$pipelines$graph$FlowExecution$$stopped().get()) {
                throw new IllegalStateException("flow " + write.identifier() + " was stopped before its write");
            }
            Table destination = write.destination();
            if (destination.isStreamingTable()) {
                writer.saveAsTable(name);
                return;
            }
            data.writeTo(destination.identifier().quotedString()).overwrite(functions.lit(true));
        } finally {
            context.removeJobTag(tag);
            WRITES.remove(write);
        }
    }

    /**
     * Cancels the Spark jobs of {@code flow}'s write under way, if any: for a flow SDP was asked to stop
     * ({@link PipelineRuns}), whose write would otherwise go on to its commit. The write then fails
     * uncommitted (Delta commits a write whole or not at all), and SDP ends the stopped flow STOPPED.
     * Only jobs running now are cancelled: the caller calls again for a job the write starts later.
     * Returns whether a write of that flow was under way.
     */
    public static boolean cancel(FlowExecution flow, String reason) {
        TaggedWrite write = WRITES.get(flow);
        if (write == null) {
            return false;
        }
        write.context().cancelJobsWithTag(write.tag(), reason);
        return true;
    }
}
