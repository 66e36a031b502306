package lakewatch.agent;

import java.io.IOException;
import java.lang.instrument.ClassFileTransformer;
import java.lang.instrument.Instrumentation;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.ProtectionDomain;

import org.apache.xbean.asm9.ClassReader;
import org.apache.xbean.asm9.ClassVisitor;
import org.apache.xbean.asm9.ClassWriter;
import org.apache.xbean.asm9.MethodVisitor;
import org.apache.xbean.asm9.Opcodes;

/**
 * A Java agent for the local engine: open-source Spark Declarative Pipelines' graph resolution
 * without a thread that spins while it waits.
 *
 * <p>{@code DataflowGraphTransformer.transformDownNodes} hands each flow's analysis to a pool of
 * threads and then loops, without pausing, over its list of futures ({@code futures.partition(_.isDone)})
 * until all are done. So while flows are analysed (every update's graph resolution, and again each
 * time a flow starts) one thread keeps a core busy doing nothing: on a 2-core machine, half the CPU
 * the analysis could use. This agent inserts {@code LockSupport.parkNanos(PAUSE_NANOS)} before each
 * {@code ArrayBuffer.partition} call of that method, so the loop checks its futures every
 * {@value #PAUSE_NANOS} ns instead of continuously. Nothing else changes: the same futures are
 * checked in the same order, exceptions propagate as before.
 *
 * <p>If the method or the call is not found (another Spark version), the class is left as Spark
 * ships it, and the agent says so on standard error.
 *
 * <p>{@code java -cp <this jar>:<xbean-asm9-shaded jar> lakewatch.agent.GraphResolutionWait IN OUT}
 * writes the class file IN as the agent changes it to OUT (exit code 3 when it would not change it),
 * for {@code javap -c} to show the difference.
 */
public final class GraphResolutionWait implements ClassFileTransformer {
    static final String TARGET = "org/apache/spark/sql/pipelines/graph/DataflowGraphTransformer";
    static final String METHOD = "transformDownNodes";
    static final String WAIT_OWNER = "scala/collection/mutable/ArrayBuffer";
    static final String WAIT_CALL = "partition";
    /** How long the loop pauses between two looks at its futures: 0.2 ms. */
    public static final long PAUSE_NANOS = 200_000L;

    private GraphResolutionWait() {}

    public static void premain(String args, Instrumentation instrumentation) {
        instrumentation.addTransformer(new GraphResolutionWait());
    }

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            System.err.println("usage: GraphResolutionWait IN.class OUT.class");
            System.exit(2);
        }
        byte[] patched = patch(Files.readAllBytes(Path.of(args[0])));
        if (patched == null) {
            System.err.println("no " + WAIT_CALL + " call in " + METHOD + ": nothing changed");
            System.exit(3);
        }
        Files.write(Path.of(args[1]), patched);
    }

    @Override
    public byte[] transform(ClassLoader loader, String className, Class<?> redefined,
                            ProtectionDomain domain, byte[] classfile) {
        if (!TARGET.equals(className)) {
            return null;
        }
        try {
            byte[] patched = patch(classfile);
            if (patched == null) {
                System.err.println("lakewatch agent: no " + WAIT_CALL + " call in " + TARGET + "." + METHOD
                        + "; graph resolution runs as Spark ships it");
            }
            return patched;
        } catch (RuntimeException e) {
            System.err.println("lakewatch agent: " + TARGET + " left as shipped: " + e);
            return null;
        }
    }

    /** The class with the pause inserted, or null when there was nothing to insert it before. */
    static byte[] patch(byte[] classfile) {
        ClassReader reader = new ClassReader(classfile);
        ClassWriter writer = new ClassWriter(reader, ClassWriter.COMPUTE_MAXS);
        int[] inserted = {0};
        reader.accept(new ClassVisitor(Opcodes.ASM9, writer) {
            @Override
            public MethodVisitor visitMethod(int access, String name, String descriptor, String signature,
                                             String[] exceptions) {
                MethodVisitor next = super.visitMethod(access, name, descriptor, signature, exceptions);
                if (!METHOD.equals(name)) {
                    return next;
                }
                return new MethodVisitor(Opcodes.ASM9, next) {
                    @Override
                    public void visitMethodInsn(int opcode, String owner, String called, String calledDescriptor,
                                                boolean isInterface) {
                        if (opcode == Opcodes.INVOKEVIRTUAL && WAIT_OWNER.equals(owner) && WAIT_CALL.equals(called)) {
                            super.visitLdcInsn(PAUSE_NANOS);
                            super.visitMethodInsn(Opcodes.INVOKESTATIC, "java/util/concurrent/locks/LockSupport",
                                    "parkNanos", "(J)V", false);
                            inserted[0]++;
                        }
                        super.visitMethodInsn(opcode, owner, called, calledDescriptor, isInterface);
                    }
                };
            }
        }, 0);
        return inserted[0] > 0 ? writer.toByteArray() : null;
    }
}
