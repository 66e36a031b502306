package lakewatch.sdp;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * Two of open-source Spark Declarative Pipelines' classes, rewritten at setup so that SDP waits
 * without spinning or oversleeping. Spark 4.2's SDP waits in two loops:
 *
 * <p>1. {@code DataflowGraphTransformer.transformDownNodes} hands each flow's analysis to a pool of
 * threads and then loops, without pausing, over its list of futures ({@code futures.partition(_.isDone)})
 * until all are done. So while flows are analysed (every update's graph resolution, and again each
 * time a flow starts) one thread keeps a core busy doing nothing. {@code
 * LockSupport.parkNanos(RESOLUTION_PAUSE_NANOS)} is inserted before each {@code ArrayBuffer.partition}
 * call of that method: the loop looks at its futures every 0.2 ms.
 *
 * <p>2. {@code TriggeredGraphExecution.topologicalExecution} starts the flows whose inputs are done,
 * then {@code Thread.sleep}s for {@code spark.sql.pipelines.execution.streamstate.pollingInterval}
 * (whole seconds, 1 by default) before it looks again, so each level of the graph waits up to a
 * second after its inputs finished; with 0 it yields instead of sleeping and keeps a core busy. Its
 * {@code Thread.sleep(long)} call becomes {@link #pollSleep}: at most {@value #POLL_MILLIS} ms.
 *
 * <p>Nothing else changes: the same futures and flows are checked in the same order, exceptions
 * (an interrupt included) propagate as before.
 *
 * <p>{@code java -cp <classes>:<xbean-asm9-shaded jar> lakewatch.sdp.SdpWaits IN OUT} writes the class
 * file IN as rewritten to OUT, and exits with code 3 (writing nothing) when it has nothing to change:
 * setup writes both classes into lakewatch's jar this way (pipelines/local/sdp_waits.py).
 */
public final class SdpWaits {
    static final String RESOLUTION = "org/apache/spark/sql/pipelines/graph/DataflowGraphTransformer";
    static final String RESOLUTION_METHOD = "transformDownNodes";
    static final String EXECUTION = "org/apache/spark/sql/pipelines/graph/TriggeredGraphExecution";
    static final String EXECUTION_METHOD = "topologicalExecution";  // a suffix: Scala mangles private names
    /** How long graph resolution pauses between two looks at its futures: 0.2 ms. */
    public static final long RESOLUTION_PAUSE_NANOS = 200_000L;
    /** The longest the flow scheduler sleeps between two looks at its flows: 10 ms. */
    public static final long POLL_MILLIS = 10L;

    private SdpWaits() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: SdpWaits IN.class OUT.class");
            System.exit(2);
        }
        byte[] patched = patch(Files.readAllBytes(Path.of(args[0])));
        if (patched == null) {
            System.err.println("nothing to change in " + args[0] + ": nothing changed");
            System.exit(3);
        }
        Files.write(Path.of(args[1]), patched);
    }

    /** The flow scheduler's sleep: {@code millis}, but at most {@value #POLL_MILLIS} ms (also for 0 or less). */
    public static void pollSleep(long millis) throws InterruptedException {
        Thread.sleep(millis <= 0 ? POLL_MILLIS : Math.min(millis, POLL_MILLIS));
    }

    /** The class as rewritten, or null when it has nothing to change. */
    static byte[] patch(byte[] classfile) {
        ClassReader reader = new ClassReader(classfile);
        String className = reader.getClassName();
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] changed = {0};
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                                             String[] exceptions) {
                MethodVisitor next = super.visitMethod(access, name, descriptor, signature, exceptions);
                if (RESOLUTION.equals(className) && RESOLUTION_METHOD.equals(name)) {
                    return new MethodVisitor(Opcodes.ASM9, next) {
                        @Override
                        public void visitMethodInsn(int opcode, String owner, String called, String calledDescriptor,
                                                    boolean isInterface) {
                            if (opcode == Opcodes.INVOKEVIRTUAL && "scala/collection/mutable/ArrayBuffer".equals(owner)
                                    && "partition".equals(called)) {
                                super.visitLdcInsn(RESOLUTION_PAUSE_NANOS);
                                super.visitMethodInsn(Opcodes.INVOKESTATIC, "java/util/concurrent/locks/LockSupport",
                                        "parkNanos", "(J)V", false);
                                changed[0]++;
                            }
                            super.visitMethodInsn(opcode, owner, called, calledDescriptor, isInterface);
                        }
                    };
                }
                if (EXECUTION.equals(className) && name.endsWith(EXECUTION_METHOD) && "()V".equals(descriptor)) {
                    return new MethodVisitor(Opcodes.ASM9, next) {
                        @Override
                        public void visitMethodInsn(int opcode, String owner, String called, String calledDescriptor,
                                                    boolean isInterface) {
                            if (opcode == Opcodes.INVOKESTATIC && "java/lang/Thread".equals(owner)
                                    && "sleep".equals(called) && "(J)V".equals(calledDescriptor)) {
                                super.visitMethodInsn(Opcodes.INVOKESTATIC, "lakewatch/sdp/SdpWaits",
                                        "pollSleep", "(J)V", false);
                                changed[0]++;
                                return;
                            }
                            super.visitMethodInsn(opcode, owner, called, calledDescriptor, isInterface);
                        }
                    };
                }
                return next;
            }
        }, 0);
        return changed[0] > 0 ? writer.toByteArray() : null;
    }
}
