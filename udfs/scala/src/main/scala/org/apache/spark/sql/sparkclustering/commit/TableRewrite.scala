package org.apache.spark.sql.sparkclustering
package commit

import org.apache.spark.sql.{DataFrame, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.sparkclustering.commit.formats.FormatTableRewrite
import org.apache.spark.sql.sparkclustering.tables.CatalogTables

/**
 * How `recluster()` lists, reads and rewrites one kind of table: plain parquet/orc files
 * (PlainTableRewrite: a journal of renames and deletes, since such a table has no log), Delta Lake
 * and Iceberg (FormatTableRewrite: the format's own rewrite transaction). The kind is decided once,
 * from the catalog (TableRewrite.forTable); the table functions table_data_files,
 * table_file_rows, table_rewrite_commit, table_rewrite_recover and table_committed_rows
 * (TableRewriteCommands) are the same for every kind.
 */
private[commit] trait TableRewrite {

  /** The table's current data files, with the version they are of (None for a plain table). */
  def dataFiles(spark: SparkSession, tableName: String): TableFiles

  /** The rows of the data files `paths` (as dataFiles lists them) at `version` (None: as the table is
   *  now), read without opening any other data file of the table: a recluster's cost is the files
   *  it rewrites, not the table. A path that is not a data file of that version is an error. */
  def rowsOfFiles(spark: SparkSession, tableName: String, version: Option[Long], paths: Seq[String]): DataFrame

  /** Let go of what rowsOfFiles keeps for its reads (Iceberg: the staged scan tasks); called once the
   *  rewrite committed or was given up (commit, recover). */
  def releaseRows(spark: SparkSession, tableName: String): Unit = ()

  /** The rows of the table at `version` by its own metadata, when that version replaced all of its
   *  data; None when unknown (always, for a plain table: there are no versions). */
  def committedRows(spark: SparkSession, tableName: String, version: Long): Option[Long]

  /** Put the validated staged files in place of `request.replaced`, or abort leaving the table as it
   *  was; the staging table leaves the catalog either way. */
  def commit(spark: SparkSession, request: RewriteRequest): RewriteOutcome

  /** A cheap token of the table's data and whether recovery has work (TableState). */
  def state(spark: SparkSession, tableName: String): TableState

  /** Finish or undo what interrupted runs left (staging directories, the staging table), called by
   *  the lease holder only: one (run id, action) per run. */
  def recover(spark: SparkSession, tableName: String, stagingTable: String): Seq[(String, String)]
}

/** The table kinds, as the catalog's provider names them. */
private[commit] sealed abstract class TableKind(val name: String)

private[commit] object TableKind {
  case object Plain extends TableKind("plain")
  case object Delta extends TableKind("delta")
  case object Iceberg extends TableKind("iceberg")

  /** The kind of `tableName` from its catalog entry: its provider, and for a table of the Hive
   *  metastore without one (provider `hive`) Iceberg's own mark, table_type = ICEBERG (what Iceberg's
   *  session catalog writes there). */
  def of(tableName: String, provider: Option[String], properties: Map[String, String]): TableKind = {
    val name = provider.map(_.toLowerCase).getOrElse("")
    name match {
      case "parquet" | "orc" => Plain
      case "delta" => Delta
      case "iceberg" => Iceberg
      case "hive" if properties.get("table_type").exists(_.equalsIgnoreCase("iceberg")) => Iceberg
      case _ => throw SparkClusteringErrors.invalidArgument("recluster", s"$tableName is a table of provider " +
        s"'${provider.getOrElse("none")}': spark_clustering rewrites parquet, orc, delta and iceberg tables only")
    }
  }
}

/** One live data file: its path as the table's file metadata column reports it, size, modification
 *  time (Iceberg keeps none: its snapshot's commit time), the statistics the format's log keeps for
 *  it as JSON (Delta's `add.stats`; None elsewhere), whether rows of it are deleted by a deletion
 *  vector / delete file (then its statistics count deleted rows too), and whether the table's last
 *  clustered_table build wrote it (FormatTableRewrite.BuildVersion). */
private[commit] case class TableDataFile(path: String, size: Long, modificationTime: Long, logStats: Option[String] = None,
    hasRowDeletes: Boolean = false, fromBuild: Boolean = false)

/** A table's data files at `version` (Delta log version, Iceberg snapshot id; None for a plain table). */
private[commit] case class TableFiles(version: Option[Long], files: Seq[TableDataFile])

/** A file a rewrite replaces, as the recluster read it: table_rewrite_commit's `'<size>:<mtime>:<path>'`. */
private[sparkclustering] case class ReplacedFile(path: String, size: Long, modificationTime: Long)

private[sparkclustering] object ReplacedFile {
  def parse(entry: String): ReplacedFile = entry.split(":", 3) match {
    case Array(size, mtime, path) if path.nonEmpty && Seq(size, mtime).forall(_.matches("-?[0-9]+")) =>
      ReplacedFile(path, size.toLong, mtime.toLong)
    case _ => throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
      s"replaced file '$entry' must be '<size>:<modification time>:<path>'")
  }
}

/** table_rewrite_commit's arguments. Each kind takes what it needs: `filePrefix` and
 *  `validatedBytes` the plain commit, `readVersion` and `validatedRows` the formats'. */
private[sparkclustering] case class RewriteRequest(tableName: String, leaseToken: String, stagingTable: String, stagingDir: String,
    filePrefix: String, readVersion: Option[Long], validatedRows: Option[Long], validatedBytes: Option[Long],
    clusterBy: Seq[String], replaced: Seq[ReplacedFile]) {

  /** An argument the table's kind requires, or an error naming it. */
  def required[T](value: Option[T], argument: String, kind: TableKind): T = value.getOrElse(
    throw SparkClusteringErrors.invalidArgument("table_rewrite_commit",
      s"$argument must be given: $tableName is a table of kind ${kind.name}"))
}

/** table_rewrite_commit's row: status (`committed`, `aborted: <why>`, `rolled back: <why>`) and what
 *  the commit added and removed. */
private[commit] case class RewriteOutcome(status: String, filesAdded: Long, filesRemoved: Long, bytesAdded: Long, bytesRemoved: Long)

private[commit] object RewriteOutcome {
  def aborted(why: String): RewriteOutcome = RewriteOutcome(s"aborted: $why", 0L, 0L, 0L, 0L)
}

private[commit] object TableRewrite {

  /** A path that rowsOfFiles was asked for and that is no data file of the version read: the caller's
   *  listing is stale (another writer changed the table), or the path is wrong. */
  def notDataFiles(tableName: String, version: String, missing: Seq[String]): RuntimeException =
    SparkClusteringErrors.invalidArgument("table_file_rows", s"${missing.size} file(s) are not data files of " +
      s"$tableName$version, e.g. ${missing.head}; list them again with table_data_files")

  /** The rewrite of the table's kind (TableKind.of its catalog entry). */
  def forTable(spark: SparkSession, tableName: String): TableRewrite = {
    val t = CatalogTables.table(spark, tableName)
    forKind(TableKind.of(tableName, t.provider, t.properties))
  }

  def forKind(kind: TableKind): TableRewrite = kind match {
    case TableKind.Plain => PlainTableRewrite
    case format => loadFormat(format.name)
  }

  /** The implementation of each format, by the object's class name: a jar holds those whose format
   *  has a release for its Spark line (build_jar.py compiles udfs/scala/src/formats/<format>/ only
   *  then), so the jar for Spark 4.3 has neither, the one for 4.2 no Iceberg. */
  private val Implementations = {
    val formats = classOf[FormatTableRewrite].getName.stripSuffix("FormatTableRewrite")
    Map("delta" -> s"${formats}DeltaTableRewrite$$", "iceberg" -> s"${formats}IcebergTableRewrite$$")
  }
  /** A class of each format's own jar that the implementation calls: loaded first, so a session
   *  without the format's jars gets an error saying so rather than a NoClassDefFoundError later. */
  private val FormatClasses = Map(
    "delta" -> "org.apache.spark.sql.delta.DeltaLog",
    "iceberg" -> "org.apache.iceberg.spark.Spark3Util")

  private def loadFormat(name: String): TableRewrite = {
    val implementation = try Class.forName(Implementations(name)).getField("MODULE$").get(null).asInstanceOf[TableRewrite] catch {
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

  /** The staging table named by table_rewrite_commit / table_rewrite_recover (None for ''),
   *  checked to be a recluster staging table: never a table of the user's is dropped. */
  def stagingTableIdent(spark: SparkSession, stagingTable: String): Option[TableIdentifier] =
    Option(stagingTable).filter(_.nonEmpty).map { name =>
      val ident = Sessions.classic(spark).sessionState.sqlParser.parseTableIdentifier(name)
      if (!ident.table.toLowerCase.endsWith("__sc_recluster")) {
        throw SparkClusteringErrors.invalidArgument("recluster",
          s"staging table '$name' must be a recluster staging table (<table>__sc_recluster)")
      }
      ident
    }

  /** Drop the staging table from the catalog if it is there (an external table: its files stay). */
  def dropStagingTable(spark: SparkSession, stagingTable: String): Unit =
    stagingTableIdent(spark, stagingTable).filter(Sessions.classic(spark).sessionState.catalog.tableExists)
      .foreach(ident => spark.sql(s"DROP TABLE IF EXISTS ${ident.quotedString}"))
}
