package org.apache.spark.sql.sparkclustering

/** What udfs/scala/build_jar.py built this jar for: the resource `spark-clustering-build.properties`
 *  it writes into the jar (the Spark line, its Scala version, the pyspark compiled against, the jar's
 *  name). SparkClusteringExtensions checks the running Spark against it before anything loads. */
private[sparkclustering] object BuildInfo {
  val Resource = "/spark-clustering-build.properties"

  private lazy val properties: java.util.Properties = {
    val p = new java.util.Properties()
    val in = getClass.getResourceAsStream(Resource)
    if (in != null) try p.load(in) finally in.close()
    p
  }

  def sparkLine: String = properties.getProperty("spark.line", "unknown")
  def jarName: String = properties.getProperty("jar", "spark-clustering-udfs")
  /** The release of a table format (delta, iceberg) the jar's rewrite of it is compiled against. */
  def formatVersion(format: String): String = properties.getProperty(s"$format.version", "unknown")
}
