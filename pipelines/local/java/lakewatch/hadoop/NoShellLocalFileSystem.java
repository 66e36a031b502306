package lakewatch.hadoop;

import org.apache.hadoop.fs.LocalFileSystem;

/** {@code fs.file.impl}: Hadoop's checksummed local file system over {@link NoShellRawLocalFileSystem}. */
public class NoShellLocalFileSystem extends LocalFileSystem {
  public NoShellLocalFileSystem() {
    super(new NoShellRawLocalFileSystem());
  }
}
