package org.apache.spark.sql.sparkclustering

import scala.util.Try

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.internal.SQLConf

/**
 * Every `spark.sparkclustering.*` setting of the extension, declared once with its default and
 * what it does (as Delta's DeltaSQLConf does). All are session confs: `SET key=value`, or
 * `--conf` / `spark-defaults.conf` for every session. A value that does not parse falls back to
 * the default.
 */
private[sparkclustering] object SparkClusteringConf {

  final case class Setting[T](key: String, default: T, doc: String)(parse: String => T) {
    def get(spark: SparkSession): T = from(spark.conf.get(key, null))
    def get(conf: SQLConf): T = from(conf.getConfString(key, null))
    private def from(value: String): T = Option(value).flatMap(v => Try(parse(v.trim)).toOption).getOrElse(default)
  }

  private def boolean(key: String, default: Boolean, doc: String) = Setting(key, default, doc)(_.toBoolean)
  private def positiveInt(key: String, default: Int, doc: String) =
    Setting(key, default, doc)(v => { val n = v.toInt; require(n > 0); n })
  private def seconds(key: String, default: Double, doc: String) = Setting(key, default, doc)(_.toDouble)
  private def string(key: String, default: String, doc: String) = Setting(key, default, doc)(identity)

  // ---- data skipping (skipping/)

  val SkippingEnabled: Setting[Boolean] = boolean("spark.sparkclustering.skipping.enabled", true,
    "Skip parquet / orc files at planning whose statistics prove no row passes the scan's filters; " +
      "false plans scans exactly as Spark does.")
  val SkippingFooterThreads: Setting[Int] = positiveInt("spark.sparkclustering.skipping.footerThreads", 16,
    "Driver threads reading the footers of files the statistics sidecar does not cover.")
  val SkippingCacheFiles: Setting[Int] = positiveInt("spark.sparkclustering.skipping.cacheFiles", 100000,
    "Footer statistics cached on the driver, in files (least recently used dropped first).")

  // ---- one set of files per scan while a recluster commits (snapshot/)

  val CommitViewEnabled: Setting[Boolean] = boolean("spark.sparkclustering.commitView.enabled", true,
    "A scan of a plain parquet / orc table planned while a recluster() commit is in flight reads the " +
      "new files or the old ones they replace, never both (from the commit's journal); false reads " +
      "whatever the listing holds, as Spark does.")
  val CommitViewWaitSeconds: Setting[Double] = seconds("spark.sparkclustering.commitView.waitSeconds", 5,
    "How long after a commit published its journal a scan waits for the commit's new files to be in " +
      "place (the old ones are deleted right after) before it reads the old files instead.")

  val CommitDeleteDelaySeconds: Setting[Double] = seconds("spark.sparkclustering.commit.deleteDelaySeconds", 0,
    "How long a recluster() commit keeps the files it replaces once its new files are in place. A " +
      "scan with the extension planned meanwhile reads the new files; one planned before the commit " +
      "finishes reading the old ones instead of failing on a deleted file. A reader without the " +
      "extension reads both for that long: set it only where every reader loads the jar.")

  // ---- observed workloads (workload/)

  val WorkloadRecord: Setting[Boolean] = boolean("spark.sparkclustering.workload.record", true,
    "Record which ranges of a clustered table's clustering columns each scan filters on, for " +
      "cluster_workload: observed; false records nothing.")

  // ---- the writer lease (commit/)

  val LeaseTtlSeconds: Setting[Double] = seconds("spark.sparkclustering.lease.ttlSeconds", 60,
    "A writer lease not renewed for this long (its holder crashed) may be taken over; at least 1.")
  val LeaseIdleSeconds: Setting[Double] = seconds("spark.sparkclustering.lease.idleSeconds", 3600,
    "A lease its holder has not used (no recover, commit or Spark job of its driver) for this long is " +
      "no longer renewed: the run that took it is taken to be gone (a client that died over Thrift).")
  val LeaseMaxHoldSeconds: Setting[Double] = seconds("spark.sparkclustering.lease.maxHoldSeconds", 21600,
    "A lease is not renewed past this age: a hung writer gives up its table.")

  // ---- the one fault-injection hook (tests; docs/concurrency.md "Test hooks")

  val TestPauseAt: Setting[String] = string("spark.sparkclustering.test.pauseAt", "",
    "Tests only (TestPausePoints.at): `<step>` sleeps at that step of a commit, swap or recovery, " +
      "to be killed there; `<step>:fail` fails there; `<step>:wait` waits there until test.release names " +
      "it. Empty: inert.")
  val TestReached: Setting[String] = string("spark.sparkclustering.test.reached", "",
    "Tests only: set by a commit to the step it is waiting at.")
  val TestRelease: Setting[String] = string("spark.sparkclustering.test.release", "",
    "Tests only: the step a waiting commit may go on from.")

  val all: Seq[Setting[_]] = Seq(SkippingEnabled, SkippingFooterThreads, SkippingCacheFiles, CommitViewEnabled,
    CommitViewWaitSeconds, CommitDeleteDelaySeconds, WorkloadRecord,
    LeaseTtlSeconds, LeaseIdleSeconds, LeaseMaxHoldSeconds, TestPauseAt, TestReached, TestRelease)
}
