package org.apache.spark.sql.sparkclustering
package commit

import java.net.URI
import java.nio.charset.StandardCharsets

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileSystem, Path}

/**
 * A `recluster()` commit on S3 without a copy. S3 has no rename (S3A copies every object it
 * renames), so on S3A the rewritten files are not staged and moved: they are written as pending
 * multipart uploads to their final names in the table (S3A's magic paths, the mechanism of its
 * magic committer). An upload in progress is not an object: no listing or read sees it. The commit
 * completes each one with one request, then deletes the replaced files.
 *
 * For a run `<run>` of a table at `<root>`:
 *   - `<root>/__magic_job-<run>/__base/<partition>/<name>` is where a task writes a file: S3A uploads
 *     its bytes to `<root>/<partition>/<name>` and keeps the upload pending, described by
 *     `<that path>.pending` (PendingUploadCommitProtocol);
 *   - `<root>/_sc_recluster_<run>/_sc_pending` lists the files of the committed tasks (written at job
 *     commit); the journal beside it (`_sc_manifest`) lists them as `complete` steps.
 * Both names start with `_`, so Spark's listing of the table skips them.
 */
private[commit] object PendingUploads {

  /** S3A writes a file below a directory of this prefix as a pending upload (CommitConstants). */
  val MagicPrefix = "__magic_job-"
  val ListName = "_sc_pending"
  /** The DataFrameWriter option (copied into the write job's Hadoop conf) naming the files. */
  val FilePrefixOption = "spark.sparkclustering.recluster.filePrefix"

  private val S3AClass = "org.apache.hadoop.fs.s3a.S3AFileSystem"
  /** S3A's path capability of magic paths (CommitConstants.STORE_CAPABILITY_MAGIC_COMMITTER). */
  private val MagicCapability = "fs.s3a.capability.magic.committer"

  /** A file the commit completes: the `.pending` file of its upload, where it lands, its bytes. */
  case class Upload(pending: Path, destination: Path, size: Long)

  /** Why a copy-free commit cannot be used for a table at `root`, or None when it can. */
  def unsupported(conf: Configuration, root: Path): Option[String] = {
    val fs = root.getFileSystem(conf)
    if (fs.getClass.getName != S3AClass) Some(s"${root.toUri.getScheme}:// is not S3A")
    else if (!fs.hasPathCapability(root, MagicCapability)) {
      Some(s"S3A's magic paths are disabled for ${root.toUri.getAuthority} (fs.s3a.committer.magic.enabled=false)")
    } else None
  }

  def magicDir(root: Path, runId: String): Path = new Path(root, MagicPrefix + runId)
  def magicBase(root: Path, runId: String): Path = new Path(magicDir(root, runId), "__base")
  def pendingOf(magicFile: Path): Path = new Path(magicFile.getParent, magicFile.getName + ".pending")

  // ---- the list of committed task files (written by the driver at job commit) ------------------

  def writeList(conf: Configuration, staging: Path, magicFiles: Seq[Path]): Seq[Upload] = {
    val fs = staging.getFileSystem(conf)
    val uploads = magicFiles.sortBy(_.toString).map { f =>
      val pending = pendingOf(f)
      val (destination, size) = S3APendingUploads.describe(fs, pending)
      Upload(pending, destination, size)
    }
    // an object appears whole: no temporary name (and so no copy) needed
    val out = fs.create(new Path(staging, ListName), true)
    try out.write(uploads.map(u => s"${u.pending.toUri}\t${u.destination.toUri}\t${u.size}")
      .mkString("", "\n", "\n").getBytes(StandardCharsets.UTF_8))
    finally out.close()
    uploads
  }

  /** The uploads a run's write committed, or None when the staging directory has no list (a staged
   *  write, or a pending write that did not finish). */
  def readList(conf: Configuration, staging: Path): Option[Seq[Upload]] = {
    val path = new Path(staging, ListName)
    CommitJournal.readLines(conf, path).map(_.map(_.split("\t", -1).toSeq match {
      case Seq(pending, destination, size) =>
        Upload(new Path(new URI(pending)), new Path(new URI(destination)), size.toLong)
      case other => throw new IllegalStateException(s"spark_clustering: unreadable line in $path: ${other.mkString("\t")}")
    }))
  }

  // ---- completing and aborting ----------------------------------------------------------------

  def complete(fs: FileSystem, pending: Path): Unit = S3APendingUploads.complete(fs, pending)
  def abort(fs: FileSystem, pending: Path): Unit = S3APendingUploads.abort(fs, pending)

  /** After a commit: the run's magic directory (markers and `.pending` files) is not needed. */
  def cleanUp(conf: Configuration, root: Path, runId: String): Unit = {
    val dir = magicDir(root, runId)
    val fs = dir.getFileSystem(conf)
    if (fs.getClass.getName == S3AClass) fs.delete(dir, true)
  }

  /** Abort every upload of a run that will not be committed: those described by a `.pending` file
   *  below its magic directory, and any other below `root` whose name carries `runId` (a task
   *  killed mid-write leaves an upload without one), then delete the magic directory. */
  def rollBack(conf: Configuration, root: Path, runId: String): Unit = {
    val dir = magicDir(root, runId)
    val fs = dir.getFileSystem(conf)
    if (fs.getClass.getName != S3AClass) return
    if (fs.exists(dir)) {
      val files = fs.listFiles(dir, true)
      val pendings = scala.collection.mutable.ArrayBuffer[Path]()
      while (files.hasNext) {
        val p = files.next().getPath
        if (p.getName.endsWith(".pending")) pendings += p
      }
      // an upload already aborted (e.g. by an S3A committer's cleanup) or completed is no error
      // here; the sweep below finds any upload still in progress
      pendings.foreach(p => try S3APendingUploads.abort(fs, p) catch { case _: java.io.IOException => })
    }
    S3APendingUploads.abortUploadsNamed(fs, root, _.contains(runId))
    fs.delete(dir, true)
  }

  /** Under the table's lease no run of the package is live: abort every upload in progress below
   *  `root` with the name of a recluster's file (`sc-l<level>-<run>-...`), those of runs killed
   *  before their files were listed included. Other writers' uploads have other names. */
  def abortStray(conf: Configuration, root: Path): Int = {
    val fs = root.getFileSystem(conf)
    if (fs.getClass.getName != S3AClass || !fs.hasPathCapability(root, MagicCapability)) 0
    else S3APendingUploads.abortUploadsNamed(fs, root, _.startsWith("sc-l"))
  }
}
