package lakewatch.hadoop;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.ChecksumFs;
import org.apache.hadoop.fs.FsConstants;

/**
 * {@code fs.AbstractFileSystem.file.impl}: what Hadoop's {@code LocalFs} is (checksummed, for
 * {@code FileContext}, which Delta's log store and Spark's streaming checkpoints rename through),
 * over {@link NoShellRawLocalFs}.
 */
public class NoShellLocalFs extends ChecksumFs {
  public NoShellLocalFs(URI uri, Configuration conf) throws IOException, URISyntaxException {
    super(new NoShellRawLocalFs(FsConstants.LOCAL_FS_URI, conf)); // as Hadoop's LocalFs: file:/// whatever the URI
  }
}
