package lakewatch.hadoop;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;

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
 * checkpoints). An observability refresh started about 3,700 processes, an ingest update with
 * nothing new about 900, about 2 ms each. This class does the same two things with Java's own file
 * API, and leaves everything it cannot do the same way (a sticky bit, a symbolic link) to Hadoop.
 */
public class NoShellRawLocalFileSystem extends RawLocalFileSystem {

  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
    PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ,
  };

  /** The permission bits of {@code mode} (its low nine bits) as Java's permission set. */
  static Set<PosixFilePermission> posix(int mode) {
    Set<PosixFilePermission> set = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        set.add(BITS[bit]);
      }
    }
    return set;
  }

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    int mode = permission.toShort();
    if ((mode & ~0777) != 0) {
      super.setPermission(p, permission); // sticky bit: Java's file API cannot set it
      return;
    }
    Files.setPosixFilePermissions(pathToFile(p).toPath(), posix(mode));
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
