package org.apache.spark.sql.sparkclustering
package tables

import org.apache.hadoop.fs.Path

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.TableIdentifier
import org.apache.spark.sql.catalyst.analysis.NoSuchTableException
import org.apache.spark.sql.catalyst.catalog.{CatalogTable, ExternalCatalogUtils}

/** A table as the session catalog describes it: looked up by name, its location and its
 *  partitions' locations, and its cached file listing refreshed after a commit. */
private[sparkclustering] object CatalogTables {

  def table(spark: SparkSession, name: String): CatalogTable = {
    val session = Sessions.classic(spark)
    val ident: TableIdentifier = session.sessionState.sqlParser.parseTableIdentifier(name)
    session.sessionState.catalog.getTableMetadata(ident)
  }

  /** The table's metadata, or None when there is no such table (one metastore read; any other
   *  failure is thrown). */
  def tableIfExists(spark: SparkSession, ident: TableIdentifier): Option[CatalogTable] =
    try Some(Sessions.classic(spark).sessionState.catalog.getTableMetadata(ident)) catch {
      case _: NoSuchTableException => None
    }

  def location(t: CatalogTable): Path = new Path(t.location)

  /** Partition directory (relative, e.g. `day=2026-01-01`) -> its location, for partitioned tables. */
  def partitionLocations(spark: SparkSession, t: CatalogTable): Map[String, Path] = {
    if (t.partitionColumnNames.isEmpty) Map("" -> location(t))
    else {
      val catalog = Sessions.classic(spark).sessionState.catalog
      catalog.listPartitions(t.identifier).map { p =>
        t.partitionColumnNames.map(c => ExternalCatalogUtils.getPartitionPathString(c, p.spec(c)))
          .mkString("/") -> new Path(p.location)
      }.toMap
    }
  }

  def refresh(spark: SparkSession, t: CatalogTable): Unit =
    Sessions.classic(spark).catalog.refreshTable(t.identifier.unquotedString)
}
