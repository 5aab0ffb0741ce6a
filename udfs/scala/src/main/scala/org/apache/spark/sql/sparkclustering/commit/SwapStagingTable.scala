package org.apache.spark.sql.sparkclustering

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, CatalogTableType}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.{CommandUtils, LeafRunnableCommand}
import org.apache.spark.sql.types.{LongType, StringType}

/** `select * from drop_sidecar_table('db.t__sc_backup')`: drop one of the package's own sidecar
 *  tables (`__sc_backup`, `__sc_staging`, `__sc_recluster`) together with its files, which DROP
 *  keeps for an external table (a `location_root` build). One row (location, deleted). */
case class DropSidecarTable(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("location", StringType, nullable = true)(),
    AttributeReference("deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val (location, deleted) = DropSidecarTable.drop(spark, tableName)
    Seq(Row(location.orNull, deleted))
  }
}

object DropSidecarTable {
  /** Drops the sidecar table and deletes its directory; (its location, 1 if the directory was deleted). */
  def drop(spark: SparkSession, tableName: String): (Option[String], Long) = {
    if (!tableName.matches("(?i).*__sc_(backup|staging|recluster)`?")) {
      throw SparkClusteringErrors.invalidArgument("drop_sidecar_table",
        s"'$tableName' is not a spark_clustering sidecar table (<name>__sc_backup, __sc_staging or __sc_recluster)")
    }
    val session = ReclusterFiles.classic(spark)
    val ident = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    // one metastore read each (getTableMetadata, not tableExists + getTableMetadata)
    ReclusterFiles.tableIfExists(spark, ident) match {
      case None => (None, 0L)
      case Some(t) => (Some(ReclusterFiles.location(t).toString), dropWithFiles(spark, ident, t))
    }
  }

  private def dropWithFiles(spark: SparkSession, ident: TableIdentifier, t: CatalogTable): Long = {
    val catalog = ReclusterFiles.classic(spark).sessionState.catalog
    val loc = ReclusterFiles.location(t)
    catalog.dropTable(ident, ignoreIfNotExists = true, purge = true)
    val fs = loc.getFileSystem(ReclusterFiles.hadoopConf(spark))
    // never the live table's data: its location must not lie inside the sidecar's
    val live = ident.copy(table = ident.table.replaceAll("(?i)__sc_(backup|staging|recluster)$", ""))
    val liveLocation = ReclusterFiles.tableIfExists(spark, live).map(l => fs.makeQualified(ReclusterFiles.location(l)).toString)
    val qualified = fs.makeQualified(loc).toString
    val inside = liveLocation.exists(l => l == qualified || l.startsWith(qualified.stripSuffix("/") + "/"))
    if (!inside && fs.exists(loc) && fs.delete(loc, true)) 1L else 0L
  }
}

/** `select * from swap_staging_table('db.t', lease_token, what)`: clustered_table's swap in one
 *  call, the steps and order of the SQL path (macros/write/swap_relation.sql) without a round trip
 *  each: check the lease, rename `db.t` to `db.t__sc_backup`, rename the validated
 *  `db.t__sc_staging` to `db.t`, drop the backup with its files, release the lease. A crash
 *  between two steps leaves what the SQL path leaves, and recover_swap finishes or rolls it back.
 *  An empty token: no lease. One row (replaced: 1 when a table was replaced, backup_deleted). */
case class SwapStagingTable(tableName: String, token: String, what: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("replaced", LongType, nullable = false)(),
    AttributeReference("backup_deleted", LongType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val f = "swap_staging_table"
    val session = ReclusterFiles.classic(spark)
    val target = session.sessionState.sqlParser.parseTableIdentifier(tableName)
    val staging = target.copy(table = target.table + "__sc_staging")
    val backup = target.copy(table = target.table + "__sc_backup")
    if (token.nonEmpty) TableLease.check(token, what)
    val staged = ReclusterFiles.tableIfExists(spark, staging).getOrElse(
      throw SparkClusteringErrors.invalidArgument(f, s"$staging does not exist"))
    // recover_swap promotes only a validated staging table; so does the swap
    if (!staged.properties.get("spark_clustering.validated").contains("true")) {
      throw SparkClusteringErrors.invalidArgument(f, s"$staging is not validated (tblproperty spark_clustering.validated)")
    }
    val existing = ReclusterFiles.tableIfExists(spark, target)
    if (existing.exists(_.tableType == CatalogTableType.VIEW)) {
      throw SparkClusteringErrors.invalidArgument(f, s"$target is a view; drop it first")
    }
    existing.foreach { _ =>
      rename(session, target, backup)
      ReclusterFiles.pausePoint(spark, "clustered_table.after_backup")
    }
    rename(session, staging, target)
    ReclusterFiles.pausePoint(spark, "clustered_table.after_promote")
    val deleted = if (existing.isDefined) DropSidecarTable.drop(spark, backup.unquotedString)._2 else 0L
    if (token.nonEmpty) TableLease.release(token)
    Seq(Row(if (existing.isDefined) 1L else 0L, deleted))
  }

  /** What ALTER TABLE ... RENAME TO does, less its cache lookup (which resolves the table and lists
   *  its files): drop cached data of the old name (a cached plan of `db.t` would otherwise answer
   *  for the table that takes the name and the location next), forget its relation, rename. */
  private def rename(session: org.apache.spark.sql.classic.SparkSession, from: TableIdentifier, to: TableIdentifier): Unit = {
    CommandUtils.uncacheTableOrView(session, from)
    session.sessionState.catalog.refreshTable(from)
    session.sessionState.catalog.renameTable(from, to)
  }
}
