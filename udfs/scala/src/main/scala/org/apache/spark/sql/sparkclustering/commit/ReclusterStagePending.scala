package org.apache.spark.sql.sparkclustering
package commit

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.{Column, Observation, Row, SaveMode, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.functions.{bit_xor, coalesce, col, count, hash, lit, sum, xxhash64}
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types.{LongType, StringType}
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/**
 * `select * from recluster_stage_pending('db.t', lease_token, staging_dir, file_prefix, select_sql,
 * array(column, ...), array(partition column, ...), format)`: the write of a recluster on S3A
 * without a copy (PendingUploads). One row: status (`pending`, or `unsupported: <why>` when nothing
 * was written and the macro stages as elsewhere), then row_count, hash_sum, hash_xor (the checksum of
 * row_checksum.sql), file_bytes and files.
 *
 * The files are pending uploads, which nothing can read before the commit completes them, so the
 * checksum is not read back from them: it is observed on the rows the writer receives, in the same
 * job (Spark's observed metrics count each successful task once), and the commit checks the bytes
 * the uploads hold.
 */
private[sparkclustering] case class ReclusterStagePending(tableName: String, leaseToken: String, stagingDir: String, filePrefix: String,
    selectSql: String, columns: Seq[String], partitionColumns: Seq[String], format: String)
    extends LeafRunnableCommand {

  override val output: Seq[Attribute] = Seq(
    AttributeReference("status", StringType, nullable = false)(),
    AttributeReference("row_count", LongType, nullable = false)(),
    AttributeReference("hash_sum", LongType, nullable = false)(),
    AttributeReference("hash_xor", LongType, nullable = false)(),
    AttributeReference("file_bytes", LongType, nullable = false)(),
    AttributeReference("files", LongType, nullable = false)())

  import CommitJournal._

  override def run(spark: SparkSession): Seq[Row] = {
    val t = CatalogTables.table(spark, tableName)
    val conf = Sessions.hadoopConf(spark)
    val staging = new Path(stagingDir)
    val fs = staging.getFileSystem(conf)
    val root = fs.makeQualified(CatalogTables.location(t))
    if (!staging.getName.startsWith(StagingPrefix) || !staging.getName.matches("[A-Za-z0-9_]+") ||
        fs.makeQualified(staging.getParent) != root) {
      throw SparkClusteringErrors.invalidArgument("recluster_stage_pending",
        s"staging directory '$stagingDir' must be $root/${StagingPrefix}<run id>")
    }
    // readers find the journal of a file's run by the run in its name (InFlightCommits)
    if (!isRunPrefix(filePrefix, staging.getName.stripPrefix(StagingPrefix))) {
      throw SparkClusteringErrors.invalidArgument("recluster_stage_pending", s"file prefix '$filePrefix' must be " +
        s"sc-l<level>-<run> with the run of the staging directory $stagingDir")
    }
    val why = PendingUploads.unsupported(conf, root).orElse {
      // a file lands at <root>/<partition directory>: every partition must live there
      CatalogTables.partitionLocations(spark, t).collectFirst {
        case (rel, dir) if rel.nonEmpty && fs.makeQualified(dir) != new Path(root, rel) =>
          s"partition $rel is at $dir, not below the table's location"
      }
    }
    why match {
      case Some(reason) => return Seq(Row(s"unsupported: $reason", 0L, 0L, 0L, 0L, 0L))
      case None =>
    }
    TableLease.check(leaseToken, s"recluster of $tableName")

    // A clone of the session (same temp views) whose writes use the pending-upload protocol; the
    // caller's session, and any other write running in it, keep theirs.
    val session = Sessions.classic(spark).cloneSession()
    session.conf.set(SQLConf.FILE_COMMIT_PROTOCOL_CLASS.key, classOf[PendingUploadCommitProtocol].getName)
    val cols: Seq[Column] = columns.map(c => col(quoted(c)))
    val check = Observation("spark_clustering_recluster_check")
    val observed = session.sql(selectSql).observe(check,
      count(lit(1)).as("row_count"),
      coalesce(sum(hash(cols: _*).cast(LongType)), lit(0L)).as("hash_sum"),
      coalesce(bit_xor(xxhash64(cols: _*)), lit(0L)).as("hash_xor"))
    val writer = observed.write.format(format).mode(SaveMode.ErrorIfExists)
      .option(PendingUploads.FilePrefixOption, filePrefix)
    (if (partitionColumns.isEmpty) writer else writer.partitionBy(partitionColumns: _*)).save(stagingDir)
    val metrics = check.get
    val uploads = PendingUploads.readList(conf, staging).getOrElse(throw new IllegalStateException(
      s"spark_clustering: the pending write of $tableName committed no list in $staging"))
    Seq(Row("pending", metrics("row_count").asInstanceOf[Long], metrics("hash_sum").asInstanceOf[Long],
      metrics("hash_xor").asInstanceOf[Long], uploads.map(_.size).sum, uploads.size.toLong))
  }

  private def quoted(name: String): String = "`" + name.replace("`", "``") + "`"
}
