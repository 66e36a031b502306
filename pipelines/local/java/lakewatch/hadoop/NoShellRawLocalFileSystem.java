package lakewatch.hadoop;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's local file system without a process per call.
 *
 * <p>Without Hadoop's native library (pyspark ships none), {@link RawLocalFileSystem} runs a
 * {@code chmod} process for every file it creates and a {@code readlink} process for every link
 * status it is asked for (each rename through {@code FileContext}: Delta's log, streaming
 * checkpoints), thousands in an update. This class does the same two things with Java's own file
 * API (the file's mode as chmod sets it; a file's status where it is not a link), and leaves a
 * symbolic link's status to Hadoop.
 */
public class NoShellRawLocalFileSystem extends RawLocalFileSystem {

  /** The set-user-ID and set-group-ID bits, which chmod keeps on a directory given a numeric mode. */
  static final int SET_ID_BITS = 06000;

  /**
   * What Hadoop's {@code chmod <%04o mode> <path>} leaves: the permission bits and the sticky bit
   * from {@code permission}; on a directory the set-user-ID and set-group-ID bits it had (GNU
   * chmod keeps them for a numeric mode), on anything else none.
   */
  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    java.nio.file.Path path = pathToFile(p).toPath();
    int mode = permission.toShort() & 01777;
    if (Files.isDirectory(path)) {
      mode |= (Integer) Files.getAttribute(path, "unix:mode") & SET_ID_BITS;
    }
    Files.setAttribute(path, "unix:mode", mode);
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    File file = pathToFile(f);
    if (Files.isSymbolicLink(file.toPath())) {
      return super.getFileLinkStatus(f);
    }
    // Not a link (or missing): Hadoop's answer is the file's status, after a readlink that printed nothing.
    return getFileStatus(f);
  }
}
