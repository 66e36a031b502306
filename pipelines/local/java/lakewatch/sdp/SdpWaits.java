package lakewatch.sdp;

/**
 * How SDP's rewritten classes wait (see {@link SdpClasses}): graph resolution pauses {@value
 * #RESOLUTION_PAUSE_NANOS} ns between two looks at its futures, and the flow scheduler sleeps at most
 * {@value #POLL_MILLIS} ms between two looks at its flows.
 */
public final class SdpWaits {
    /** How long graph resolution pauses between two looks at its futures: 0.2 ms. */
    public static final long RESOLUTION_PAUSE_NANOS = 200_000L;
    /** The longest the flow scheduler sleeps between two looks at its flows: 10 ms. */
    public static final long POLL_MILLIS = 10L;

    private SdpWaits() {}

    /** The flow scheduler's sleep: {@code millis}, but at most {@value #POLL_MILLIS} ms (also for 0 or less). */
    public static void pollSleep(long millis) throws InterruptedException {
        Thread.sleep(millis <= 0 ? POLL_MILLIS : Math.min(millis, POLL_MILLIS));
    }
}
