package org.apache.spark.sql.sparkclustering
package commit

import scala.collection.mutable

import org.apache.hadoop.fs.Path
import org.apache.hadoop.mapreduce.{JobContext, TaskAttemptContext}

import org.apache.spark.internal.io.{FileCommitProtocol, FileNameSpec}
import org.apache.spark.internal.io.FileCommitProtocol.TaskCommitMessage

/**
 * The commit protocol of a recluster's write on S3A (PendingUploads): every file a task writes is a
 * pending upload to its final name in the table, and nothing is completed here. Job commit only
 * records which task attempts' files count (`_sc_pending` in the staging directory); the package's
 * own commit (`table_rewrite_commit`) completes them after validation, under its journal.
 *
 * `path` is the write's output path, the run's staging directory `<table location>/_sc_recluster_<run>`;
 * the files land in the table's location (and its partition directories below it). Set as
 * `spark.sql.sources.commitProtocolClass` only in the session clone of `recluster_stage_pending`.
 */
class PendingUploadCommitProtocol(jobId: String, path: String, dynamicPartitionOverwrite: Boolean)
    extends FileCommitProtocol with Serializable {

  def this(jobId: String, path: String) = this(jobId, path, false)

  private val staging = new Path(path)
  private val root = staging.getParent
  private val runId = staging.getName.stripPrefix(CommitJournal.StagingPrefix)
  require(staging.getName.startsWith(CommitJournal.StagingPrefix) && !dynamicPartitionOverwrite,
    s"spark_clustering: PendingUploadCommitProtocol writes a recluster's staging only, not $path")

  /** The files of this task attempt (an executor-side instance per task). */
  @transient private var written: mutable.ArrayBuffer[String] = _

  override def setupJob(jobContext: JobContext): Unit = ()

  override def commitJob(jobContext: JobContext, taskCommits: Seq[TaskCommitMessage]): Unit = {
    val files = taskCommits.flatMap(_.obj.asInstanceOf[Seq[String]]).map(new Path(_))
    PendingUploads.writeList(jobContext.getConfiguration, staging, files)
  }

  override def abortJob(jobContext: JobContext): Unit =
    PendingUploads.rollBack(jobContext.getConfiguration, root, runId)

  override def setupTask(taskContext: TaskAttemptContext): Unit = written = mutable.ArrayBuffer()

  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String], ext: String): String =
    newTaskTempFile(taskContext, dir, FileNameSpec("", ext))

  override def newTaskTempFile(taskContext: TaskAttemptContext, dir: Option[String], spec: FileNameSpec): String = {
    val attempt = taskContext.getTaskAttemptID
    val prefix = Option(taskContext.getConfiguration.get(PendingUploads.FilePrefixOption)).getOrElse(s"sc-$runId")
    // the attempt in the name: a retried task's files never share a destination with a failed attempt's
    val name = f"${spec.prefix}$prefix-${attempt.getTaskID.getId}%05d-a${attempt.getId}${spec.suffix}"
    val base = PendingUploads.magicBase(root, runId)
    val file = new Path(dir.map(new Path(base, _)).getOrElse(base), name)
    if (written == null) written = mutable.ArrayBuffer()
    written += file.toString
    file.toString
  }

  override def newTaskTempFileAbsPath(taskContext: TaskAttemptContext, absoluteDir: String, ext: String): String =
    throw new UnsupportedOperationException(
      "spark_clustering: a recluster's pending write does not write to custom partition locations")

  override def commitTask(taskContext: TaskAttemptContext): TaskCommitMessage =
    new TaskCommitMessage(Option(written).map(_.toList).getOrElse(Nil))

  override def abortTask(taskContext: TaskAttemptContext): Unit = Option(written).foreach { files =>
    files.map(new Path(_)).foreach { f =>
      val fs = f.getFileSystem(taskContext.getConfiguration)
      val pending = PendingUploads.pendingOf(f)
      // best effort: what a failed attempt leaves in progress, the recovery's sweep of uploads named
      // sc-l* aborts (PendingUploads.abortStray)
      try if (fs.exists(pending)) S3APendingUploads.abort(fs, pending) catch { case _: java.io.IOException => }
    }
  }
}
