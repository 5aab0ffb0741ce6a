package org.apache.spark.sql.sparkclustering
package workload

import java.net.URLEncoder
import java.nio.charset.StandardCharsets

import scala.collection.mutable
import scala.util.control.NonFatal

import com.fasterxml.jackson.databind.ObjectMapper
import com.fasterxml.jackson.databind.node.ObjectNode
import org.apache.hadoop.fs.Path

import org.apache.spark.internal.Logging
import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions._
import org.apache.spark.sql.catalyst.util.TypeUtils
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.internal.SQLConf
import org.apache.spark.sql.types._
import org.apache.spark.sql.sparkclustering.commit.ObjectStore

/**
 * The queries a clustered table serves, observed at planning time, for `cluster_workload:
 * observed` (layouts chosen from the queries that actually ran).
 *
 * When a scan of a table the package clustered (it has the property `spark_clustering.cluster_by`)
 * filters on its clustering columns, the filters' top-level conjuncts that compare a clustering
 * column with literals become one box {column: [lo, hi]} (`<` counts as `<=`: a box may only be
 * wider than the query). Only column names and literal bounds are kept: no query text, user or
 * other column. Boxes are counted in a few small JSON-lines files beside the table's database,
 * `<database location>/_spark_clustering_workload/<table>/slot-<n>.json` (a table name, so a
 * rebuild that swaps the table keeps its history); each file holds at most MaxBoxes distinct boxes
 * (the least recently seen go first). Recording never fails a query and costs it no I/O: boxes
 * are counted in memory and a background thread merges them into the files every FlushMillis
 * (and before observed_workload reads, and at JVM exit): on S3A a HEAD, a GET and a PUT per table
 * with new boxes (docs/workload_layouts.md). Off with
 * spark.sparkclustering.workload.record=false; forget a table's history by deleting its directory.
 */
private[sparkclustering] object ObservedWorkload extends Logging {
  val MaxBoxes = 1000
  private val Slots = 4
  // one slot per JVM: JVMs of one application rarely race on a file, and a race loses counts only
  private val slot = Math.floorMod(java.util.UUID.randomUUID().hashCode, Slots)
  private val mapper = new ObjectMapper()

  val FlushMillis = 2000L
  // (database, table) -> (a session to resolve the directory with, box JSON -> (queries, last seen ms))
  private val pending =
    mutable.LinkedHashMap.empty[(String, String), (SparkSession, mutable.LinkedHashMap[String, (Long, Long)])]
  private lazy val flusher: java.util.concurrent.ScheduledExecutorService = {
    val executor = java.util.concurrent.Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "spark_clustering-workload-flush")
      t.setDaemon(true)
      t
    }
    executor.scheduleWithFixedDelay(() => flush(), FlushMillis, FlushMillis, java.util.concurrent.TimeUnit.MILLISECONDS)
    // before SparkContext stops (priority 50), so the catalog and file system are still up
    org.apache.spark.util.ShutdownHookManager.addShutdownHook(60)(() => flush())
    executor
  }

  def enabled(conf: SQLConf): Boolean = SparkClusteringConf.WorkloadRecord.get(conf)

  /** <database location>/_spark_clustering_workload/<url-encoded table name>. */
  def directory(spark: SparkSession, database: String, table: String): Path = {
    val catalog = Sessions.classic(spark).sessionState.catalog
    val db = catalog.getDatabaseMetadata(database)
    new Path(new Path(db.locationUri), "_spark_clustering_workload/" +
      URLEncoder.encode(table.toLowerCase(java.util.Locale.ROOT), StandardCharsets.UTF_8))
  }

  /** The table property naming a table's clustering columns (`a,b` or a JSON array). */
  val ClusterByProperty = "spark_clustering.cluster_by"

  private def clusterBy(text: String): Seq[String] = {
    val t = text.trim
    if (t.startsWith("[")) {
      val node = mapper.readTree(t)
      (0 until node.size()).map(i => node.get(i).asText())
    } else t.split(",").toSeq.map(_.trim).filter(_.nonEmpty)
  }

  /** Records the box of `filters` on the table `database`.`table` when its clustering columns are
   *  known (`clusterByText`, the table's property: from the catalog entry of a plain table, the
   *  Delta log's metadata of a Delta table, the Iceberg table's properties) and recording is on;
   *  never throws. */
  def record(spark: SparkSession, database: Option[String], table: String, clusterByText: => Option[String],
      filters: Seq[Expression]): Unit = {
    try {
      if (!enabled(spark.sessionState.conf)) return
      val columns = clusterByText.toSeq.flatMap(clusterBy).map(_.toLowerCase(java.util.Locale.ROOT)).toSet
      if (columns.nonEmpty) box(filters, columns).foreach { b =>
        enqueue(spark, database.getOrElse(spark.catalog.currentDatabase), table, b)
      }
    } catch {
      case NonFatal(e) => logWarning(s"spark_clustering: could not record the workload of a scan: ${e.getMessage}")
    }
  }

  private object ColumnOf {
    def unapply(e: Expression): Option[AttributeReference] = e match {
      case a: AttributeReference => Some(a)
      case _ => None
    }
  }

  private object Lit {
    def unapply(e: Expression): Option[Literal] = e match {
      case l: Literal if l.value != null => Some(l)
      case _ => None
    }
  }

  /** The JSON box {column: [lo, hi]} (null = open) of the conjuncts on `columns`, or None. */
  def box(filters: Seq[Expression], columns: Set[String]): Option[String] = {
    val lo = mutable.LinkedHashMap.empty[String, Literal]
    val hi = mutable.LinkedHashMap.empty[String, Literal]
    def ordering(dt: DataType) = TypeUtils.getInterpretedOrdering(dt)
    def tighten(bounds: mutable.LinkedHashMap[String, Literal], name: String, l: Literal, keepLarger: Boolean): Unit = {
      val key = name.toLowerCase(java.util.Locale.ROOT)
      if (!columns.contains(key) || !printable(l)) return
      bounds.get(key) match {
        case Some(old) if old.dataType == l.dataType =>
          val c = ordering(l.dataType).compare(l.value, old.value)
          if ((keepLarger && c > 0) || (!keepLarger && c < 0)) bounds(key) = l
        case Some(_) =>
        case None => bounds(key) = l
      }
    }
    def conjuncts(e: Expression): Seq[Expression] = e match {
      case And(a, b) => conjuncts(a) ++ conjuncts(b)
      case other => Seq(other)
    }
    filters.flatMap(conjuncts).foreach {
      case EqualTo(ColumnOf(a), Lit(l)) => tighten(lo, a.name, l, keepLarger = true); tighten(hi, a.name, l, keepLarger = false)
      case EqualTo(Lit(l), ColumnOf(a)) => tighten(lo, a.name, l, keepLarger = true); tighten(hi, a.name, l, keepLarger = false)
      case GreaterThan(ColumnOf(a), Lit(l)) => tighten(lo, a.name, l, keepLarger = true)
      case GreaterThanOrEqual(ColumnOf(a), Lit(l)) => tighten(lo, a.name, l, keepLarger = true)
      case LessThan(ColumnOf(a), Lit(l)) => tighten(hi, a.name, l, keepLarger = false)
      case LessThanOrEqual(ColumnOf(a), Lit(l)) => tighten(hi, a.name, l, keepLarger = false)
      case GreaterThan(Lit(l), ColumnOf(a)) => tighten(hi, a.name, l, keepLarger = false)
      case GreaterThanOrEqual(Lit(l), ColumnOf(a)) => tighten(hi, a.name, l, keepLarger = false)
      case LessThan(Lit(l), ColumnOf(a)) => tighten(lo, a.name, l, keepLarger = true)
      case LessThanOrEqual(Lit(l), ColumnOf(a)) => tighten(lo, a.name, l, keepLarger = true)
      case In(ColumnOf(a), list) if list.nonEmpty && list.forall(_.isInstanceOf[Literal]) =>
        val lits = list.map(_.asInstanceOf[Literal]).filter(_.value != null)
        if (lits.nonEmpty) {
          val ord = ordering(lits.head.dataType)
          tighten(lo, a.name, lits.minBy(_.value)(ord), keepLarger = true)
          tighten(hi, a.name, lits.maxBy(_.value)(ord), keepLarger = false)
        }
      case InSet(ColumnOf(a), set) if set.nonEmpty && !set.contains(null) =>
        val ord = ordering(a.dataType)
        tighten(lo, a.name, Literal(set.min(ord), a.dataType), keepLarger = true)
        tighten(hi, a.name, Literal(set.max(ord), a.dataType), keepLarger = false)
      case _ =>
    }
    val keys = (lo.keys ++ hi.keys).toSeq.distinct
    if (keys.isEmpty) None
    else {
      val node = mapper.createObjectNode()
      keys.sorted.foreach { k =>
        val pair = node.putArray(k)
        Seq(lo.get(k), hi.get(k)).foreach {
          case Some(l) => put(pair, l)
          case None => pair.addNull()
        }
      }
      Some(mapper.writeValueAsString(node))
    }
  }

  // numbers as JSON numbers; dates, timestamps and strings as their Spark string form (cast back by type)
  private def printable(l: Literal): Boolean = l.dataType match {
    case _: IntegralType | _: DecimalType | DateType | TimestampType | TimestampNTZType | StringType => true
    case FloatType => !l.value.asInstanceOf[Float].isNaN && !l.value.asInstanceOf[Float].isInfinite
    case DoubleType => !l.value.asInstanceOf[Double].isNaN && !l.value.asInstanceOf[Double].isInfinite
    case _ => false
  }

  private def put(array: com.fasterxml.jackson.databind.node.ArrayNode, l: Literal): Unit = l.dataType match {
    case ByteType | ShortType | IntegerType | LongType => array.add(l.value.asInstanceOf[Number].longValue())
    case FloatType => array.add(l.value.asInstanceOf[Float].toDouble)
    case DoubleType => array.add(l.value.asInstanceOf[Double])
    case _: DecimalType => array.add(new java.math.BigDecimal(l.value.toString))
    case _ => array.add(Cast(l, StringType, Some(SQLConf.get.sessionLocalTimeZone)).eval().toString)
  }

  private val PerformanceCreateOption = "fs.s3a.create.performance"

  private def slotFile(dir: Path): Path = new Path(dir, s"slot-$slot.json")

  /** box JSON -> (queries, last seen ms) of one slot file; empty when it is missing or unreadable. */
  private def read(fs: org.apache.hadoop.fs.FileSystem, file: Path): mutable.LinkedHashMap[String, (Long, Long)] = {
    val out = mutable.LinkedHashMap.empty[String, (Long, Long)]
    // open alone, no exists() first: on S3A each is a HEAD
    val in = try fs.open(file) catch { case _: java.io.FileNotFoundException => return out }
    try {
      scala.io.Source.fromInputStream(in, "UTF-8").getLines().foreach { line =>
        try {
          val node = mapper.readTree(line)
          out(mapper.writeValueAsString(node.get("box"))) = (node.get("queries").asLong(), node.get("last").asLong())
        } catch { case NonFatal(_) => } // a torn line costs that box only
      }
    } finally in.close()
    out
  }

  /** Adds `queries` of `box`, last seen at `last` ms, to the counts in `into`. */
  private def count(into: mutable.LinkedHashMap[String, (Long, Long)], box: String, queries: Long, last: Long): Unit = {
    val (q0, l0) = into.getOrElse(box, (0L, 0L))
    into(box) = (q0 + queries, math.max(l0, last))
  }

  /** Counts one query of `box` in memory (the planning path: no metastore call, no file I/O). */
  private def enqueue(spark: SparkSession, database: String, table: String, box: String): Unit = {
    pending.synchronized {
      val (_, boxes) = pending.getOrElseUpdate((database, table), (spark, mutable.LinkedHashMap.empty))
      count(boxes, box, 1L, System.currentTimeMillis())
    }
    flusher // started by the first recorded box
  }

  /** Merges the boxes counted since the last flush into their tables' slot files; never throws. */
  def flush(): Unit = synchronized { // a reader flushing waits for a flush under way
    val batch = pending.synchronized {
      val b = pending.toList
      pending.clear()
      b
    }
    batch.foreach { case ((database, table), (spark, boxes)) =>
      try merge(spark, database, table, boxes)
      catch {
        case NonFatal(e) => logWarning(s"spark_clustering: could not save the workload of $database.$table: ${e.getMessage}")
      }
    }
  }

  private def merge(spark: SparkSession, database: String, table: String,
                    added: mutable.LinkedHashMap[String, (Long, Long)]): Unit = synchronized {
    val dir = directory(spark, database, table)
    val fs = dir.getFileSystem(Sessions.hadoopConf(spark))
    val file = slotFile(dir)
    val boxes = read(fs, file)
    added.foreach { case (box, (queries, last)) => count(boxes, box, queries, last) }
    val kept = boxes.toSeq.sortBy(-_._2._2).take(MaxBoxes)
    val text = new StringBuilder
    kept.foreach { case (b, (q, last)) =>
      val line: ObjectNode = mapper.createObjectNode()
      line.set("box", mapper.readTree(b))
      line.put("queries", q)
      line.put("last", last)
      text.append(mapper.writeValueAsString(line)).append('\n')
    }
    val bytes = text.toString.getBytes(StandardCharsets.UTF_8)
    if (ObjectStore.is(fs)) {
      // an object appears whole when its upload completes, and S3A's rename (a copy) refuses an
      // existing destination: overwrite in place. S3A's performance create skips its LIST for a
      // directory at the path (this path is only ever a file); other stores ignore the option.
      val out = fs.createFile(file).overwrite(true).recursive().opt(PerformanceCreateOption, true).build()
      try out.write(bytes) finally out.close()
    } else {
      fs.mkdirs(dir)
      val tmp = new Path(dir, s".slot-$slot-${java.util.UUID.randomUUID()}.tmp")
      val out = fs.create(tmp, true)
      try out.write(bytes) finally out.close()
      // rename does not replace on every file system: delete first (a reader in between sees no slot)
      if (!fs.rename(tmp, file)) {
        fs.delete(file, false)
        if (!fs.rename(tmp, file)) fs.delete(tmp, false)
      }
    }
  }

  /** Every slot of the table merged: (box JSON, queries, last seen ms), most queried first. */
  def observed(spark: SparkSession, tableName: String): Seq[(String, Long, Long)] = {
    flush() // what this JVM counted so far
    val ident = Sessions.classic(spark).sessionState.sqlParser.parseTableIdentifier(tableName)
    val dir = directory(spark, ident.database.getOrElse(spark.catalog.currentDatabase), ident.table)
    val fs = dir.getFileSystem(Sessions.hadoopConf(spark))
    val merged = mutable.LinkedHashMap.empty[String, (Long, Long)]
    if (fs.exists(dir)) {
      fs.listStatus(dir).filter(s => s.getPath.getName.startsWith("slot-")).foreach { s =>
        read(fs, s.getPath).foreach { case (b, (q, last)) => count(merged, b, q, last) }
      }
    }
    merged.toSeq.map { case (b, (q, last)) => (b, q, last) }.sortBy(r => (-r._2, r._1))
  }
}

/** `select * from observed_workload('db.table')`: the boxes recorded for the table (box JSON,
 *  queries, last_seen), most queried first; no rows when nothing was recorded. */
private[sparkclustering] case class ObservedWorkloadRows(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("box", StringType, nullable = false)(),
    AttributeReference("queries", LongType, nullable = false)(),
    AttributeReference("last_seen", TimestampType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] =
    ObservedWorkload.observed(spark, tableName).map { case (b, q, last) =>
      Row(b, q, new java.sql.Timestamp(last))
    }
}
