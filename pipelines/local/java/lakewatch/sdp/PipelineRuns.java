package lakewatch.sdp;

import java.lang.reflect.Field;
import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.connect.service.SessionHolder;
import org.apache.spark.sql.connect.service.SessionHolderInfo;
import org.apache.spark.sql.connect.service.SessionKey;
import org.apache.spark.sql.connect.service.SparkConnectService$;
import org.apache.spark.sql.connect.service.SparkConnectSessionManager;
import org.apache.spark.sql.pipelines.graph.FlowExecution;
import org.apache.spark.sql.pipelines.graph.PipelineUpdateContext;
import org.apache.spark.sql.pipelines.graph.StreamingFlowExecution;
import org.apache.spark.sql.pipelines.graph.TriggeredGraphExecution;
import org.apache.spark.sql.pipelines.graph.TriggeredGraphExecution$StreamState$CANCELED$;
import org.apache.spark.sql.pipelines.graph.TriggeredGraphExecution$StreamState$QUEUED$;
import org.apache.spark.sql.pipelines.graph.TriggeredGraphExecution$StreamState$TERMINATED_WITH_ERROR$;
import org.apache.spark.sql.streaming.StreamingQuery;
import scala.Option;
import scala.Tuple2;
import scala.collection.Iterator;

/**
 * Stops a pipeline run of this JVM while it runs, for a runner asked to stop (Ctrl-C, or SIGTERM when a
 * scheduler cancels its job run): pipelines/local/runner.py calls it through SQL's {@code reflect}.
 *
 * <p>Not {@code PipelineExecution.stopPipeline}: that waits for the execution's lock, which
 * {@code runPipeline} holds for the whole run. And not {@code TriggeredGraphExecution.stop} alone:
 * it ends the flow scheduler first, which ends the run's event stream, so the events of the flows it
 * stops after that have nowhere to go. Here the scheduler is left to end the run itself:
 * <ol>
 *   <li>each queued flow, and each failed flow waiting for its retry, is marked canceled, so the
 *       scheduler starts no more flows (the runner records them SKIPPED, saying why; and the run does
 *       not end as COMPLETED, which would say they ran). A flow the scheduler had already picked and
 *       starts meanwhile is stopped by the next call: the caller calls until the run has ended;</li>
 *   <li>each running flow is stopped: SDP's {@code GraphExecution.stopFlow} records it STOPPED, then a
 *       streaming flow's query stops (its micro-batch under way is cancelled, uncommitted; SDP's
 *       listener then records the flow COMPLETED, which the runner leaves out after STOPPED), and a
 *       batch flow's write under way (a materialized view's refresh) has its Spark jobs cancelled
 *       ({@link ViewRefresh#cancel}): uncommitted, the view keeps its rows. A write that reached its
 *       commit first is kept, and SDP records the flow COMPLETED;</li>
 *   <li>once no flow runs, the scheduler ends the run, and every event reaches the runner.</li>
 * </ol>
 */
public final class PipelineRuns {
    /** The run has ended: its scheduler's thread has ended (no flow will start any more), and no flow is at work. */
    public static final int ENDED = 2;
    /** The run's flows were stopped; flows may still be ending: ask again until ENDED or NO_RUN. */
    public static final int STOPPED = 1;
    /** The run is still setting up (its scheduler has not started): ask again. */
    public static final int NOT_STARTED = 0;
    /** No run of that graph in that session. */
    public static final int NO_RUN = -1;

    private PipelineRuns() {}

    /** Stops the run of dataflow graph {@code graphId} of Spark Connect session {@code sessionId}. */
    public static int stop(String sessionId, String graphId) {
        SparkConnectSessionManager sessions = SparkConnectService$.MODULE$.sessionManager();
        Iterator<SessionHolderInfo> active = sessions.listActiveSessions().iterator();
        while (active.hasNext()) {
            SessionHolderInfo info = active.next();
            if (!info.sessionId().equals(sessionId)) {
                continue;
            }
            Option<SessionHolder> holder = sessions.getIsolatedSessionIfPresent(SessionKey.apply(info.userId(), sessionId));
            Option<PipelineUpdateContext> run = holder.isEmpty() ? Option.empty() : holder.get().getPipelineExecution(graphId);
            if (run.isEmpty()) {
                return NO_RUN;
            }
            Option<TriggeredGraphExecution> execution = run.get().pipelineExecution().graphExecution();
            if (execution.isEmpty()) {
                return NOT_STARTED;
            }
            ViewRefresh.stopping(run.get());
            stopFlows(execution.get());
            return ended(execution.get()) ? ENDED : STOPPED;
        }
        return NO_RUN;
    }

    private static void stopFlows(TriggeredGraphExecution execution) {
        Iterator<Tuple2<TableIdentifier, TriggeredGraphExecution.StreamState>> states = execution.pipelineState().iterator();
        while (states.hasNext()) {
            TableIdentifier flow = states.next()._1();
            // Compare-and-set: the scheduler may be moving the same flow to RUNNING meanwhile.
            execution.pipelineState().replace(flow, TriggeredGraphExecution$StreamState$QUEUED$.MODULE$,
                TriggeredGraphExecution$StreamState$CANCELED$.MODULE$);
            execution.pipelineState().replace(flow, TriggeredGraphExecution$StreamState$TERMINATED_WITH_ERROR$.MODULE$,
                TriggeredGraphExecution$StreamState$CANCELED$.MODULE$);
        }
        RuntimeException failure = null;  // the first flow that could not be stopped; the others are stopped still
        Iterator<FlowExecution> flows = execution.flowExecutions().valuesIterator();
        while (flows.hasNext()) {
            FlowExecution flow = flows.next();
            if (flow.isCompleted()) {
                continue;
            }
            try {
                try {
                    if (!flow.org$apache$spark$sql$pipelines$graph$FlowExecution$$stopped().get()) {
                        execution.stopFlow(flow);  // SDP records it STOPPED (and throws if it cannot record it)
                    }
                } finally {
                    if (flow instanceof StreamingFlowExecution) {
                        stopStream((StreamingFlowExecution) flow);
                    } else {
                        // Again at every call: a write's job that started after the last call is cancelled too.
                        ViewRefresh.cancel(flow, "the pipeline update was canceled");
                    }
                }
            } catch (RuntimeException e) {
                failure = failure == null ? e : failure;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }

    /**
     * Whether nothing of the run is left: its scheduler's thread has ended, and no flow is at work. (The
     * flows' states alone do not say it: while the scheduler starts a flow, the flow is still QUEUED, or
     * CANCELED by a stop, and the scheduler then puts it RUNNING.)
     */
    private static boolean ended(TriggeredGraphExecution execution) {
        Option<Thread> scheduler = schedulerThread(execution);
        if (scheduler.isEmpty() || scheduler.get().isAlive()) {
            return false;
        }
        Iterator<FlowExecution> flows = execution.flowExecutions().valuesIterator();
        while (flows.hasNext()) {
            if (!flows.next().isCompleted()) {
                return false;
            }
        }
        return true;
    }

    @SuppressWarnings("unchecked")
    private static Option<Thread> schedulerThread(TriggeredGraphExecution execution) {
        try {
            Field field = TriggeredGraphExecution.class.getDeclaredField("topologicalExecutionThread");
            field.setAccessible(true);
            return (Option<Thread>) field.get(execution);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("SDP's TriggeredGraphExecution has no topologicalExecutionThread", e);
        }
    }

    /**
     * SDP's stopFlow only flags a streaming flow; its stream runs on until its query stops: the
     * micro-batch under way is cancelled uncommitted, and the next update processes those files again.
     */
    private static void stopStream(StreamingFlowExecution flow) {
        Option<StreamingQuery> query = flow.org$apache$spark$sql$pipelines$graph$StreamingFlowExecution$$_streamingQuery();
        if (query.nonEmpty() && query.get().isActive()) {
            try {
                query.get().stop();
            } catch (java.util.concurrent.TimeoutException e) {
                throw new IllegalStateException("the stream of flow " + flow.identifier() + " did not stop", e);
            }
        }
    }
}
