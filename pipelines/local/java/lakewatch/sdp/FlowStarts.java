package lakewatch.sdp;

import org.apache.spark.sql.catalyst.TableIdentifier;
import org.apache.spark.sql.pipelines.graph.DataflowGraph;
import org.apache.spark.sql.pipelines.graph.Flow;
import org.apache.spark.sql.pipelines.graph.FlowFunctionResult;
import org.apache.spark.sql.pipelines.graph.ResolvedFlow;

import scala.Option;
import scala.collection.Iterator;
import scala.collection.immutable.Set;

/**
 * A flow started without analysing its query again when nothing it reads can have changed since the
 * update resolved the graph (the {@code flow_starts} patch, see {@link SdpClasses}).
 *
 * <p>Open-source SDP 4.2 resolves the whole graph when an update starts, materializes the tables,
 * and then, as it starts each flow, resolves the flow's part of the graph again ({@code
 * DataflowGraph.reanalyzeFlow}: the flow and the flows upstream of it, up to the tables), so that a
 * flow reading a table sees the table as materialized. A flow whose part of the graph reads no table
 * (of the graph or outside it), only files and temporary views, gets the same analysis again: for
 * the local engine's bronze flows that is the rescue plan, analysed twice more at every flow start,
 * one flow after another. For such a flow the resolution the update already made is returned; any
 * other flow is analysed again, as before.
 */
public final class FlowStarts {
    private FlowStarts() {}

    /**
     * The flow as the update resolved it, when neither it nor a flow upstream of it (as far as
     * {@code reanalyzeFlow} looks: up to the tables) reads a table; else null (analyse it again).
     */
    public static ResolvedFlow unchanged(DataflowGraph graph, Flow flow) {
        Option<ResolvedFlow> resolved = graph.resolvedFlow().get(flow.identifier());
        if (resolved.isEmpty() || !graph.flowNodes().contains(flow.identifier())) {
            return null;
        }
        // The datasets reanalyzeFlow resolves again: the flow's destination and, upstream of it, every
        // dataset up to the tables (a set of datasets, not of flows); their flows are the ones it resolves.
        Set<TableIdentifier> upstream = graph.dfsInternal(graph.flowNodes().apply(flow.identifier()).output(),
                false, true);
        Iterator<ResolvedFlow> flows = graph.resolvedFlows().iterator();
        int checked = 0;
        while (flows.hasNext()) {
            ResolvedFlow each = flows.next();
            if (!each.identifier().equals(flow.identifier()) && !upstream.contains(each.destinationIdentifier())) {
                continue;
            }
            checked++;
            FlowFunctionResult result = each.funcResult();
            if (!result.resolved() || !result.usedExternalInputs().isEmpty()) {
                return null;
            }
            Iterator<TableIdentifier> inputs = result.inputs().iterator();
            while (inputs.hasNext()) {
                if (graph.table().contains(inputs.next())) {
                    return null;
                }
            }
        }
        return checked > 0 ? resolved.get() : null;
    }
}
