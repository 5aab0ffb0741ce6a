package org.apache.spark.sql.sparkclustering
package commit

import org.apache.hadoop.fs.FileSystem

/** Object stores (S3, GCS, Azure, ...) as the package's writers see them: a rename copies every
 *  byte, and an object is visible only once its upload completed (so a write needs no temporary
 *  name to be published whole). The same schemes as the macros' _object_store_schemes. */
private[sparkclustering] object ObjectStore {
  val Schemes: Set[String] = Set("s3", "s3a", "s3n", "gs", "abfs", "abfss", "wasb", "wasbs", "oss", "cos", "cosn", "obs")

  def is(fs: FileSystem): Boolean = Option(fs.getUri.getScheme).exists(s => Schemes.contains(s.toLowerCase))
}
