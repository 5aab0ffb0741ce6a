package org.apache.spark.sql.sparkclustering
package tables

import scala.collection.mutable

import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.{FileStatus, Path}

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.catalog.CatalogTable
import org.apache.spark.sql.sparkclustering.stats.FileStatsStore

/** One data file of a table as a directory listing finds it. `etag`: the store's ETag of the
 *  content, where the listing gives one. */
private[sparkclustering] case class DataFile(path: Path, size: Long, modificationTime: Long,
    etag: Option[String] = None) {
  /** Exactly what `_metadata.file_path` reports, so SQL can join on it: the URL-encoded URI,
   *  without the empty authority Hadoop writes for local files (`file:/x`, not `file:///x`). */
  def filePath: String = {
    val uri = path.toUri
    val text = uri.toString
    if (uri.getAuthority == null || uri.getAuthority.isEmpty) text.replaceFirst("^([A-Za-z][A-Za-z0-9+.-]*):///", "$1:/")
    else text
  }
}

/** The files Spark reads for a table without a log of its own (plain parquet/orc): what its
 *  location and its partitions' locations hold, by Spark's rule for which names are data. */
private[sparkclustering] object DataFiles {

  /** Spark's own rule (HadoopFSUtils.shouldFilterOutPathName): these names are not data; a
   *  `._COPYING_` file is one being copied in (`hadoop fs -put`), not yet data either. */
  def isHidden(name: String): Boolean =
    (name.startsWith("_") && !name.contains("=")) || name.startsWith(".") || name.endsWith("._COPYING_")

  /** Every file below `root` that Spark would read (recursive, hidden names skipped), with its
   *  directory relative to `root` ("" for root itself, else e.g. `day=1`). */
  def visible(conf: Configuration, root: Path): Seq[(FileStatus, String)] = {
    val fs = root.getFileSystem(conf)
    val found = mutable.ArrayBuffer[(FileStatus, String)]()
    def walk(dir: Path, rel: String): Unit =
      fs.listStatus(dir).filterNot(s => isHidden(s.getPath.getName)).foreach { s =>
        if (s.isDirectory) walk(s.getPath, if (rel.isEmpty) s.getPath.getName else s"$rel/${s.getPath.getName}")
        else found += ((s, rel))
      }
    if (fs.exists(root)) walk(root, "")
    found.toSeq
  }

  /** Every data file Spark reads for the table: its location and every partition's location. */
  def of(spark: SparkSession, t: CatalogTable): Seq[DataFile] = {
    val conf = Sessions.hadoopConf(spark)
    val roots = (Seq(CatalogTables.location(t)) ++ CatalogTables.partitionLocations(spark, t).values).distinct
    val seen = mutable.LinkedHashMap[String, DataFile]()
    roots.foreach { root =>
      val qualified = root.getFileSystem(conf).makeQualified(root)
      visible(conf, qualified).foreach { case (status, _) =>
        seen.getOrElseUpdate(status.getPath.toString,
          DataFile(status.getPath, status.getLen, status.getModificationTime, FileStatsStore.etagOf(status)))
      }
    }
    seen.values.toSeq
  }
}
