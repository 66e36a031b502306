package lakewatch.sdp;

/**
 * How SDP's flow scheduler waits once the {@code scheduler_poll} patch rewrote it (see {@link
 * SdpClasses}): it sleeps at most {@value #POLL_MILLIS} ms between two looks at its flows, whatever
 * the polling interval says, and never yields in a loop.
 */
public final class SdpWaits {
    /** The longest the flow scheduler sleeps between two looks at its flows: 10 ms. */
    public static final long POLL_MILLIS = 10L;

    private SdpWaits() {}

    /** The flow scheduler's sleep: {@code millis}, but at most {@value #POLL_MILLIS} ms (also for 0 or less). */
    public static void pollSleep(long millis) throws InterruptedException {
        Thread.sleep(millis <= 0 ? POLL_MILLIS : Math.min(millis, POLL_MILLIS));
    }
}
