package org.apache.spark.sql.sparkclustering
package commit

import scala.jdk.CollectionConverters._

import org.apache.hadoop.fs.{FileSystem, Path}
import org.apache.hadoop.fs.s3a.S3AFileSystem
import org.apache.hadoop.fs.s3a.commit.CommitOperations
import org.apache.hadoop.fs.s3a.commit.files.SinglePendingCommit

/** The one file that uses hadoop-aws (this file: Hadoop 3.3, in Spark 3.5, whose commit operations
 *  run inside a commit context, with AWS SDK v1 types): S3A's pending multipart uploads, read,
 *  completed and aborted with S3A's own commit operations (those of its magic committer). Only
 *  `PendingUploads` calls it, after checking that the file system is S3A. */
private[commit] object S3APendingUploads {

  private def s3a(fs: FileSystem): S3AFileSystem = fs.asInstanceOf[S3AFileSystem]

  private def load(fs: FileSystem, pending: Path): SinglePendingCommit =
    SinglePendingCommit.serializer().load(fs, pending)

  private def inContext[T](fs: FileSystem, path: Path)(f: CommitOperations#CommitContext => T): T = {
    val context = new CommitOperations(s3a(fs)).initiateCommitOperation(path)
    try f(context) finally context.close()
  }

  /** The upload a `.pending` file describes: its destination and its length in bytes. */
  def describe(fs: FileSystem, pending: Path): (Path, Long) = {
    val c = load(fs, pending)
    (fs.makeQualified(s3a(fs).keyToQualifiedPath(c.getDestinationKey)), c.getLength)
  }

  /** Complete the upload (one POST): its object appears whole at its destination. */
  def complete(fs: FileSystem, pending: Path): Unit = inContext(fs, pending.getParent)(_.commitOrFail(load(fs, pending)))

  /** Abort the upload: its parts are dropped, nothing ever appears at its destination. */
  def abort(fs: FileSystem, pending: Path): Unit = inContext(fs, pending.getParent)(_.abortSingleCommit(load(fs, pending)))

  /** Abort every upload in progress below `dir` whose object's name (the key's last part) passes
   *  `named`, e.g. those of a task killed before it wrote its `.pending` file; how many. */
  def abortUploadsNamed(fs: FileSystem, dir: Path, named: String => Boolean): Int = {
    val ops = new CommitOperations(s3a(fs))
    val uploads = ops.listPendingUploadsUnderPath(dir).asScala.toSeq.filter(u => named(u.getKey.split('/').last))
    if (uploads.isEmpty) 0 else inContext(fs, dir) { context =>
      uploads.foreach(u => context.abortMultipartCommit(u.getKey, u.getUploadId))
      uploads.size
    }
  }
}
