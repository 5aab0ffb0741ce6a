package org.apache.spark.sql.sparkclustering
package commit

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.fs.s3a.S3AFileSystem
import org.apache.hadoop.fs.s3a.commit.files.SinglePendingCommit
import org.apache.hadoop.fs.s3a.commit.impl.CommitOperations

/** The one file that uses hadoop-aws: S3A's pending multipart uploads, read, completed and aborted
 *  with S3A's own commit operations (those of its magic committer). Only `PendingUploads` calls it,
 *  after checking that the file system is S3A, so a session without hadoop-aws never loads it. */
private[commit] object S3APendingUploads {

  private def s3a(fs: FileSystem): S3AFileSystem = fs.asInstanceOf[S3AFileSystem]

  private def load(fs: FileSystem, pending: Path): SinglePendingCommit =
    SinglePendingCommit.serializer().load(fs, pending)

  /** The upload a `.pending` file describes: its destination and its length in bytes. */
  def describe(fs: FileSystem, pending: Path): (Path, Long) = {
    val c = load(fs, pending)
    (fs.makeQualified(s3a(fs).keyToQualifiedPath(c.getDestinationKey)), c.getLength)
  }

  /** Complete the upload (one POST): its object appears whole at its destination. */
  def complete(fs: FileSystem, pending: Path): Unit = new CommitOperations(s3a(fs)).commitOrFail(load(fs, pending))

  /** Abort the upload: its parts are dropped, nothing ever appears at its destination. */
  def abort(fs: FileSystem, pending: Path): Unit = new CommitOperations(s3a(fs)).abortSingleCommit(load(fs, pending))

  /** Abort every upload in progress below `dir` whose object's name (the key's last part) passes
   *  `named`, e.g. those of a task killed before it wrote its `.pending` file; how many. */
  def abortUploadsNamed(fs: FileSystem, dir: Path, named: String => Boolean): Int = {
    val ops = new CommitOperations(s3a(fs))
    ops.listPendingUploadsUnderPath(dir).asScala.toSeq.filter(u => named(u.key.split('/').last)).map { u =>
      ops.abortMultipartCommit(u.key, u.uploadId)
    }.size
  }
}
