package lakewatch.sdp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.Handle;
import org.apache.xbean.asm9.Label;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * The rewriter of open-source Spark Declarative Pipelines' classes (Spark 4.2), run at setup with
 * Spark's own shaded ASM. Each patch rewrites its own classes and nothing else, so a class whose
 * shape another Spark changed costs only that patch (pipelines/local/sdp_classes.py builds one jar
 * per patch, pipelines/local/patches.py decides which the engine loads):
 *
 * <p>{@code resolution_pause}: {@code DataflowGraphTransformer.transformDownNodes} hands each flow's
 * analysis to a pool of threads and then loops, without pausing, over its list of futures ({@code
 * futures.partition(_.isDone)}) until all are done. So while flows are analysed (every update's graph
 * resolution, and again each time a flow starts) one thread keeps a core busy doing nothing. {@code
 * LockSupport.parkNanos(RESOLUTION_PAUSE_NANOS)} is inserted before each {@code ArrayBuffer.partition}
 * call of that method: the loop looks at its futures every 0.2 ms. Spark 4.2.0 ships that loop as
 * described; upstream's fix (SPARK-57638: the loop waits on an {@code ExecutorCompletionService}) is
 * not in it, and a Spark that has it has no {@code partition} call there, so this patch is refused.
 *
 * <p>{@code scheduler_poll}: {@code TriggeredGraphExecution.topologicalExecution} starts the flows
 * whose inputs are done, then {@code Thread.sleep}s for {@code
 * spark.sql.pipelines.execution.streamstate.pollingInterval} (whole seconds, 1 by default) before it
 * looks again, so each level of the graph waits up to a second after its inputs finished; with 0 it
 * yields instead of sleeping and keeps a core busy. Its {@code Thread.sleep(long)} call becomes
 * {@link SdpWaits#pollSleep}: at most 10 ms.
 *
 * <p>{@code view_refresh}, two classes that only work together: {@code
 * DatasetManager.materializeTable} runs {@code TRUNCATE TABLE} on every materialized view (and on a
 * streaming table being fully refreshed); its {@code SparkSession.sql} call for that statement
 * becomes {@link ViewRefresh#truncate}, which is given the table (the method's second parameter) and
 * truncates streaming tables only. And {@code BatchTableWrite} appends a flow's rows with {@code
 * DataFrameWriter.saveAsTable}; that call becomes {@link ViewRefresh#saveAsTable}, which is given the
 * write and its rows (the parameters of the method that writes) and overwrites a materialized view in
 * one commit.
 *
 * <p>{@code flow_starts}: {@code DataflowGraph.reanalyzeFlow} resolves a starting flow's part of the
 * graph again; it first asks {@link FlowStarts#unchanged}, and returns the flow as the update
 * resolved it when that gives one (a flow whose part of the graph reads no table).
 *
 * <p>Nothing else changes: the same calls run in the same order, exceptions (an interrupt included)
 * propagate as before.
 *
 * <p>{@code java -cp <classes>:<xbean-asm9-shaded jar> lakewatch.sdp.SdpClasses PATCH IN OUT} writes
 * the class file IN as patch PATCH rewrites it to OUT, and exits with code 3 (writing nothing) when
 * that patch finds nothing to change in it: the class's shape is not the one the patch was written for.
 */
public final class SdpClasses {
    static final String RESOLUTION_PAUSE = "resolution_pause";
    static final String SCHEDULER_POLL = "scheduler_poll";
    static final String VIEW_REFRESH = "view_refresh";
    static final String FLOW_STARTS = "flow_starts";

    /** How long graph resolution pauses between two looks at its futures: 0.2 ms. */
    static final long RESOLUTION_PAUSE_NANOS = 200_000L;

    static final String GRAPH = "org/apache/spark/sql/pipelines/graph/";
    static final String RESOLUTION = GRAPH + "DataflowGraphTransformer";
    static final String RESOLUTION_METHOD = "transformDownNodes";
    static final String EXECUTION = GRAPH + "TriggeredGraphExecution";
    static final String EXECUTION_METHOD = "topologicalExecution";  // a suffix: Scala mangles private names
    static final String DATASETS = GRAPH + "DatasetManager$";
    static final String MATERIALIZE_METHOD = "materializeTable";
    // materializeTable(graph, table, isFullRefresh, context): the table is local variable 2 (0 is the object)
    static final String MATERIALIZE_DESCRIPTOR = "(L" + GRAPH + "DataflowGraph;L" + GRAPH + "Table;ZL" + GRAPH
            + "PipelineUpdateContext;)L" + GRAPH + "Table;";
    static final int MATERIALIZE_TABLE_SLOT = 2;
    static final String TRUNCATE_RECIPE = "TRUNCATE TABLE ";  // the string SDP builds the statement from
    static final String SESSION = "org/apache/spark/sql/classic/SparkSession";
    static final String DATASET = "org/apache/spark/sql/classic/Dataset";
    static final String SQL_DESCRIPTOR = "(Ljava/lang/String;)L" + DATASET + ";";
    static final String BATCH_WRITE = GRAPH + "BatchTableWrite";
    // the static method of BatchTableWrite that writes: (the write, the flow's rows), local variables 0 and 1
    static final String WRITE_DESCRIPTOR = "(L" + BATCH_WRITE + ";L" + DATASET + ";)V";
    static final String WRITER = "org/apache/spark/sql/classic/DataFrameWriter";
    static final String HELPERS = "lakewatch/sdp/";
    static final String FLOW_GRAPH = GRAPH + "DataflowGraph";
    static final String REANALYZE_METHOD = "reanalyzeFlow";
    static final String RESOLVED_FLOW = GRAPH + "ResolvedFlow";
    static final String REANALYZE_DESCRIPTOR = "(L" + GRAPH + "Flow;)L" + RESOLVED_FLOW + ";";

    private SdpClasses() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: SdpClasses PATCH IN.class OUT.class");
            System.exit(2);
        }
        byte[] patched = patch(args[0], Files.readAllBytes(Path.of(args[1])));
        if (patched == null) {
            System.err.println(args[0] + " found nothing to change in " + args[1] + ": nothing changed");
            System.exit(3);
        }
        Files.write(Path.of(args[2]), patched);
    }

    /** The class as patch {@code patchName} rewrites it, or null when that patch has nothing to change in it. */
    static byte[] patch(String patchName, byte[] classfile) {
        ClassReader reader = new ClassReader(classfile);
        String className = reader.getClassName();
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] changed = {0};
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                                             String[] exceptions) {
                MethodVisitor next = super.visitMethod(access, name, descriptor, signature, exceptions);
                switch (patchName) {
                    case RESOLUTION_PAUSE:
                        if (RESOLUTION.equals(className) && RESOLUTION_METHOD.equals(name)) {
                            return new PauseBeforePartition(next, changed);
                        }
                        break;
                    case SCHEDULER_POLL:
                        if (EXECUTION.equals(className) && name.endsWith(EXECUTION_METHOD) && "()V".equals(descriptor)) {
                            return new PollSleep(next, changed);
                        }
                        break;
                    case VIEW_REFRESH:
                        if (DATASETS.equals(className) && MATERIALIZE_METHOD.equals(name)
                                && MATERIALIZE_DESCRIPTOR.equals(descriptor)) {
                            return new TruncateStreamingTablesOnly(next, changed);
                        }
                        if (BATCH_WRITE.equals(className) && (access & Opcodes.ACC_STATIC) != 0
                                && WRITE_DESCRIPTOR.equals(descriptor)) {
                            return new OverwriteViews(next, changed);
                        }
                        break;
                    case FLOW_STARTS:
                        if (FLOW_GRAPH.equals(className) && REANALYZE_METHOD.equals(name)
                                && REANALYZE_DESCRIPTOR.equals(descriptor) && (access & Opcodes.ACC_STATIC) == 0) {
                            return new ReuseResolvedFlow(next, changed);
                        }
                        break;
                    default:
                        throw new IllegalArgumentException("no patch named " + patchName);
                }
                return next;
            }
        }, 0);
        return changed[0] > 0 ? writer.toByteArray() : null;
    }

    /** One method's rewrite: it counts each change it makes in {@code changed[0]}. */
    abstract static class Rewrite extends MethodVisitor {
        final int[] changed;

        Rewrite(MethodVisitor next, int[] changed) {
            super(Opcodes.ASM9, next);
            this.changed = changed;
        }
    }

    /** resolution_pause: a 0.2 ms pause before each look at the futures. */
    static final class PauseBeforePartition extends Rewrite {
        PauseBeforePartition(MethodVisitor next, int[] changed) {
            super(next, changed);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String called, String descriptor, boolean isInterface) {
            if (opcode == Opcodes.INVOKEVIRTUAL && "scala/collection/mutable/ArrayBuffer".equals(owner)
                    && "partition".equals(called)) {
                super.visitLdcInsn(RESOLUTION_PAUSE_NANOS);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, "java/util/concurrent/locks/LockSupport", "parkNanos",
                        "(J)V", false);
                changed[0]++;
            }
            super.visitMethodInsn(opcode, owner, called, descriptor, isInterface);
        }
    }

    /** scheduler_poll: the scheduler's sleep through SdpWaits.pollSleep. */
    static final class PollSleep extends Rewrite {
        PollSleep(MethodVisitor next, int[] changed) {
            super(next, changed);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String called, String descriptor, boolean isInterface) {
            if (opcode == Opcodes.INVOKESTATIC && "java/lang/Thread".equals(owner) && "sleep".equals(called)
                    && "(J)V".equals(descriptor)) {
                super.visitMethodInsn(Opcodes.INVOKESTATIC, HELPERS + "SdpWaits", "pollSleep", "(J)V", false);
                changed[0]++;
                return;
            }
            super.visitMethodInsn(opcode, owner, called, descriptor, isInterface);
        }
    }

    /** view_refresh, DatasetManager: the TRUNCATE TABLE statement goes through ViewRefresh.truncate, with the table. */
    static final class TruncateStreamingTablesOnly extends Rewrite {
        private boolean truncateStatement;  // the last string built was a TRUNCATE TABLE statement

        TruncateStreamingTablesOnly(MethodVisitor next, int[] changed) {
            super(next, changed);
        }

        @Override
        public void visitInvokeDynamicInsn(String name, String descriptor, Handle bootstrap, Object... arguments) {
            truncateStatement = "makeConcatWithConstants".equals(name) && arguments.length > 0
                    && arguments[0] instanceof String && ((String) arguments[0]).startsWith(TRUNCATE_RECIPE);
            super.visitInvokeDynamicInsn(name, descriptor, bootstrap, arguments);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String called, String descriptor, boolean isInterface) {
            if (truncateStatement && opcode == Opcodes.INVOKEVIRTUAL && SESSION.equals(owner) && "sql".equals(called)
                    && SQL_DESCRIPTOR.equals(descriptor)) {
                super.visitVarInsn(Opcodes.ALOAD, MATERIALIZE_TABLE_SLOT);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, HELPERS + "ViewRefresh", "truncate",
                        "(L" + SESSION + ";Ljava/lang/String;L" + GRAPH + "Table;)L" + DATASET + ";", false);
                truncateStatement = false;
                changed[0]++;
                return;
            }
            truncateStatement = false;
            super.visitMethodInsn(opcode, owner, called, descriptor, isInterface);
        }
    }

    /** view_refresh, BatchTableWrite: the flow's saveAsTable goes through ViewRefresh.saveAsTable, with the write and its rows. */
    static final class OverwriteViews extends Rewrite {
        OverwriteViews(MethodVisitor next, int[] changed) {
            super(next, changed);
        }

        @Override
        public void visitMethodInsn(int opcode, String owner, String called, String descriptor, boolean isInterface) {
            if (opcode == Opcodes.INVOKEVIRTUAL && WRITER.equals(owner) && "saveAsTable".equals(called)
                    && "(Ljava/lang/String;)V".equals(descriptor)) {
                super.visitVarInsn(Opcodes.ALOAD, 0);
                super.visitVarInsn(Opcodes.ALOAD, 1);
                super.visitMethodInsn(Opcodes.INVOKESTATIC, HELPERS + "ViewRefresh", "saveAsTable",
                        "(L" + WRITER + ";Ljava/lang/String;L" + BATCH_WRITE + ";L" + DATASET + ";)V", false);
                changed[0]++;
                return;
            }
            super.visitMethodInsn(opcode, owner, called, descriptor, isInterface);
        }
    }

    /**
     * flow_starts: reanalyzeFlow(flow) starts with {@code r = FlowStarts.unchanged(this, flow); if (r !=
     * null) return r;} and goes on as compiled otherwise.
     */
    static final class ReuseResolvedFlow extends Rewrite {
        ReuseResolvedFlow(MethodVisitor next, int[] changed) {
            super(next, changed);
        }

        @Override
        public void visitCode() {
            super.visitCode();
            Label analyse = new Label();
            super.visitVarInsn(Opcodes.ALOAD, 0);
            super.visitVarInsn(Opcodes.ALOAD, 1);
            super.visitMethodInsn(Opcodes.INVOKESTATIC, HELPERS + "FlowStarts", "unchanged",
                    "(L" + FLOW_GRAPH + ";L" + GRAPH + "Flow;)L" + RESOLVED_FLOW + ";", false);
            super.visitInsn(Opcodes.DUP);
            super.visitJumpInsn(Opcodes.IFNULL, analyse);
            super.visitInsn(Opcodes.ARETURN);
            super.visitLabel(analyse);
            super.visitFrame(Opcodes.F_SAME1, 0, null, 1, new Object[] {RESOLVED_FLOW});
            super.visitInsn(Opcodes.POP);
            changed[0]++;
        }
    }
}
