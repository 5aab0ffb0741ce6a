package org.apache.spark.sql.sparkclustering

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession

/**
 * `recluster()` on a table with its own transaction log (Delta Lake, Iceberg): the rewritten rows
 * are written by the format's writer into a staging table of the same format whose location is a
 * directory of the target table (`<table>/sc-l<level>-<run>/` for Delta, `<table>/data/sc-l<level>-<run>/`
 * for Iceberg), validated there with SQL, and then committed to the target by the format's own
 * rewrite transaction, which takes the staged data files over where they are: nothing is copied.
 *
 *  - Delta: one commit of RemoveFile + AddFile actions with dataChange = false (an OPTIMIZE commit),
 *    the replaced files tracked as read, so a concurrent delete/update of one of them is the format's
 *    conflict, while appends commit alongside.
 *  - Iceberg: RewriteFiles of exactly the replaced files, validated from the snapshot the rows were
 *    read at (so a concurrent delete of a replaced file, or new row deletes against it, fail it).
 *
 * The staging table's own metadata (Delta `_delta_log`, Iceberg `metadata/`) is removed after the
 * commit, and by recovery after a crash. Staged data files of a commit that never happened are
 * files no snapshot references: the format's VACUUM / remove_orphan_files deletes them, as it
 * does for any failed write.
 */
trait FormatTableRewrite {

  /** Version (Delta log version, Iceberg snapshot id) and data files of the table's current snapshot. */
  def dataFiles(spark: SparkSession, tableName: String): (Long, Seq[FormatDataFile])

  /** The rows of the table at `version` when that version replaced all of its data (a CREATE [OR
   *  REPLACE] TABLE AS SELECT: what clustered_table commits), as the format's metadata counts them
   *  (Delta: the numRecords of the commit's add actions; Iceberg: the snapshot's total-records);
   *  None when the version is no such replace, a count is missing, or rows are deleted by deletion
   *  vectors / delete files (then the rows are counted by a query). The writer counted each file's
   *  rows as it wrote them, so this is the count a query would return, without the time-travel
   *  snapshot a query at that version builds first (seconds on Delta). */
  def committedRows(spark: SparkSession, tableName: String, version: Long): Option[Long]

  /** Commit the staging table's files in place of `replaced` (paths as `dataFiles` lists them, read
   *  at `readVersion`), after checking that those files still hold `validatedRows` rows. */
  def commit(spark: SparkSession, tableName: String, stagingTable: String, stagingDir: Path, readVersion: Long,
      validatedRows: Long, replaced: Seq[String], clusterBy: Seq[String]): FormatCommitOutcome

  /** The staging table's own metadata under its directory, removed once the files are committed. */
  def stagingMetadata(stagingDir: Path): Path

  /** Staging directories of interrupted runs under the table, with their metadata still there. */
  def stagingDirs(spark: SparkSession, tableName: String): Seq[Path]
}

/** One live data file: its path as the table's file metadata column reports it, size, modification
 *  time, the statistics the format's log keeps for it as JSON (Delta's `add.stats`; None where the
 *  format keeps them elsewhere, as Iceberg in its `files` metadata table), whether rows of it are
 *  deleted by a deletion vector / delete file (then its statistics count deleted rows too), and
 *  whether the table's last clustered_table build wrote it (FormatTableRewrite.BuildVersion). */
case class FormatDataFile(path: String, size: Long, modificationTime: Long, logStats: Option[String],
    hasRowDeletes: Boolean, fromBuild: Boolean)

case class FormatCommitOutcome(status: String, filesAdded: Long, filesRemoved: Long, bytesAdded: Long,
    bytesRemoved: Long)

object FormatTableRewrite {
  /** The table property in which clustered_table records the version its build committed (Delta
   *  log version, Iceberg snapshot id): the files that version added are one clustered run, which
   *  recluster() leaves alone while appends are clustered into it (instead of taking the whole
   *  table for new files). */
  val BuildVersion = "spark_clustering.build_version"

  /** A staging directory's name: `sc-l<level>-<run id>`, the level and run of the files in it. */
  val StagingDirName: String = ReclusterFiles.RunPrefixPattern

  /** The implementation of each format, by the object's class name: a jar holds those whose format
   *  has a release for its Spark line (build_jar.py compiles udfs/scala/src/formats/<format>/ only
   *  then), so the jar for Spark 4.3 has neither, the one for 4.2 no Iceberg. */
  private val Implementations = Map(
    "delta" -> "org.apache.spark.sql.sparkclustering.DeltaTableRewrite$",
    "iceberg" -> "org.apache.spark.sql.sparkclustering.IcebergTableRewrite$")
  /** A class of each format's own jar that the implementation calls: loaded first, so a session
   *  without the format's jars gets an error saying so rather than a NoClassDefFoundError later. */
  private val FormatClasses = Map(
    "delta" -> "org.apache.spark.sql.delta.DeltaLog",
    "iceberg" -> "org.apache.iceberg.spark.Spark3Util")

  def forFormat(format: String): FormatTableRewrite = {
    val name = format.toLowerCase
    val className = Implementations.getOrElse(name, throw SparkClusteringErrors.invalidArgument("recluster",
      s"format '$format' has no rewrite transaction here (delta and iceberg do; parquet and orc tables use recluster_commit)"))
    val implementation = try Class.forName(className).getField("MODULE$").get(null).asInstanceOf[FormatTableRewrite] catch {
      case _: ClassNotFoundException => throw SparkClusteringErrors.invalidArgument("recluster",
        s"this spark_clustering jar (${BuildInfo.jarName}, for Spark ${BuildInfo.sparkLine}) has no $name support: no " +
          s"$name release runs on Spark ${BuildInfo.sparkLine} (the README's table of Spark lines says which do)")
      case e: LinkageError => throw missingFormatJars(name, e)
    }
    try Class.forName(FormatClasses(name)) catch {
      case e @ (_: ClassNotFoundException | _: LinkageError) => throw missingFormatJars(name, e)
    }
    implementation
  }

  private def missingFormatJars(name: String, e: Throwable): RuntimeException =
    SparkClusteringErrors.invalidArgument("recluster", s"$name tables need $name's own jars in the session " +
      s"(${BuildInfo.jarName} is built against $name ${BuildInfo.formatVersion(name)} for Spark ${BuildInfo.sparkLine}), " +
      s"and it could not load them: $e")

  def aborted(why: String): FormatCommitOutcome = FormatCommitOutcome(s"aborted: $why", 0L, 0L, 0L, 0L)
}
