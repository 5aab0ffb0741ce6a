package sparkclustering.tests;

import java.io.File;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.LocalFileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;

/**
 * Test-only (integration_tests/tests/test_commit_readers.py): the local file system, whose listing
 * of a directory holding a file `_stall_listing` stops between naming the directory's files and
 * reading their status, as Hadoop's own local listing does them, one after the other. It creates
 * `_stall_listing_named` once the names are read and goes on when the test removes `_stall_listing`
 * (at most 60 s later): files deleted meanwhile are skipped, files created meanwhile are not named.
 * So a test can put a whole commit inside one listing. A session uses it with
 * fs.file.impl=sparkclustering.tests.StallingLocalFileSystem and fs.file.impl.disable.cache=true.
 */
public class StallingLocalFileSystem extends LocalFileSystem {

  public StallingLocalFileSystem() {
    super(new Raw());
  }

  static class Raw extends RawLocalFileSystem {
    @Override
    public FileStatus[] listStatus(Path path) throws IOException {
      File dir = pathToFile(path);
      File marker = new File(dir, "_stall_listing");
      if (!dir.isDirectory() || !marker.exists()) {
        return super.listStatus(path);
      }
      String[] names = dir.list();
      if (names == null) {
        throw new FileNotFoundException(path.toString());
      }
      new File(dir, "_stall_listing_named").createNewFile();
      long until = System.currentTimeMillis() + 60_000L;
      while (marker.exists() && System.currentTimeMillis() < until) {
        try {
          Thread.sleep(5L);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          throw new IOException("interrupted while stalled", e);
        }
      }
      List<FileStatus> statuses = new ArrayList<>();
      for (String name : names) {
        try {
          statuses.add(getFileStatus(new Path(path, new Path(null, null, name))));
        } catch (FileNotFoundException gone) {
          // deleted since it was named: skipped, as Hadoop's listing does
        }
      }
      return statuses.toArray(new FileStatus[0]);
    }
  }
}
