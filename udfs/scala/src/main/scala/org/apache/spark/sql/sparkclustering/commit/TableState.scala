package org.apache.spark.sql.sparkclustering
package commit

import java.nio.charset.StandardCharsets
import java.security.MessageDigest

import org.apache.spark.sql.{Row, SparkSession}
import org.apache.spark.sql.catalyst.expressions.{Attribute, AttributeReference}
import org.apache.spark.sql.execution.command.LeafRunnableCommand
import org.apache.spark.sql.types.{BooleanType, StringType}
import org.apache.spark.sql.sparkclustering.stats.Footers
import org.apache.spark.sql.sparkclustering.tables.{CatalogTables, DataFiles}

/** A cheap token of a table's data (`token`: equal tokens, same data files) and whether an
 *  interrupted rewrite left something recovery must finish or undo (`pending`). recluster() compares
 *  the token with the one its maintenance record holds and stops at once when nothing changed. */
private[sparkclustering] case class TableState(token: String, pending: Boolean)

private[sparkclustering] object TableState {

  /** How far back a format's log is read for the last commit that changed data files: beyond it the
   *  current version is the token (a new token only costs one full recluster). */
  val MaxCommitsBack = 32

  /** A plain table's token: a digest of its listing (path, size, mtime of every data file), in any
   *  order, and of its location (a rebuild swapped in elsewhere is another table). */
  def listingToken(location: String, files: Seq[(String, Long, Long)]): String = {
    val digest = MessageDigest.getInstance("SHA-256")
    digest.update(location.getBytes(StandardCharsets.UTF_8))
    files.sorted.foreach { case (path, size, mtime) =>
      digest.update(s"\n$path\t$size\t$mtime".getBytes(StandardCharsets.UTF_8))
    }
    s"files:${files.size}:" + digest.digest().take(16).map(b => f"$b%02x").mkString
  }

  /** The newest commit, `current` first and then `older` (newest first), that added or removed data
   *  files (`changesFiles`: None when its log entry is unreadable), so a commit of table properties
   *  only, or an append of zero rows, keeps the token. `current` itself when none is found within
   *  MaxCommitsBack commits or an entry is unreadable; the oldest commit when the whole history
   *  changed no file. */
  def lastDataChange[V](current: V, older: Iterator[V], changesFiles: V => Option[Boolean]): V = {
    val chain = (Iterator.single(current) ++ older).take(MaxCommitsBack)
    var oldest = current
    var walked = 0
    while (chain.hasNext) {
      val v = chain.next()
      walked += 1
      changesFiles(v) match {
        case Some(true) => return v
        case Some(false) => oldest = v
        case None => return current
      }
    }
    if (walked < MaxCommitsBack) oldest else current
  }

  /** Files this small may be the empty file Spark writes for an insert of zero rows (it keeps the
   *  schema): their footers say, and a file of no rows is not part of the token. */
  val EmptyFileMaxBytes: Long = 64L * 1024

  // (path, size, mtime) -> holds no rows: a footer is read once per file, not on every post-hook
  private val emptyFiles = new java.util.LinkedHashMap[(String, Long, Long), java.lang.Boolean](256, 0.75f, true) {
    override def removeEldestEntry(e: java.util.Map.Entry[(String, Long, Long), java.lang.Boolean]): Boolean =
      size() > 10000
  }

  /** A plain table: its data files as Spark lists them (those of no rows left out), plus whether a
   *  commit journal or pending uploads of an interrupted recluster lie in its directory
   *  (table_rewrite_recover's work). */
  def plain(spark: SparkSession, tableName: String): TableState = {
    val t = CatalogTables.table(spark, tableName)
    val conf = Sessions.hadoopConf(spark)
    val root = CatalogTables.location(t)
    val fs = root.getFileSystem(conf)
    val top = if (fs.exists(root)) fs.listStatus(root).toSeq else Seq.empty
    val pending = top.exists { s =>
      val name = s.getPath.getName
      name.startsWith(CommitJournal.StagingPrefix) || name.startsWith(PendingUploads.MagicPrefix)
    }
    val format = t.provider.getOrElse("parquet")
    def empty(f: tables.DataFile): Boolean = f.size <= EmptyFileMaxBytes && {
      val key = (f.filePath, f.size, f.modificationTime)
      Option(emptyFiles.synchronized(emptyFiles.get(key))).map(_.booleanValue).getOrElse {
        val status = new org.apache.hadoop.fs.FileStatus(f.size, false, 1, 0L, f.modificationTime, f.path)
        val none = Footers.footerRowCount(conf, format, status).contains(0L)
        emptyFiles.synchronized(emptyFiles.put(key, none))
        none
      }
    }
    val files = DataFiles.of(spark, t).filterNot(empty).map(f => (f.filePath, f.size, f.modificationTime))
    TableState(listingToken(fs.makeQualified(root).toString, files), pending)
  }
}

/** `select * from table_state('db.t')`: one row (state, pending): a cheap token of the table's data
 *  (Delta: `delta:<table id>:<version>` of the last commit that changed data files; Iceberg:
 *  `iceberg:<snapshot id>` likewise; plain: a digest of its data files' listing) and whether an
 *  interrupted rewrite awaits recovery (a plain table's commit journal, a format's staging
 *  directory). Reads the format's log head / metadata or one listing: no data file, no manifest. */
private[sparkclustering] case class TableStateRows(tableName: String) extends LeafRunnableCommand {
  override val output: Seq[Attribute] = Seq(
    AttributeReference("state", StringType, nullable = false)(),
    AttributeReference("pending", BooleanType, nullable = false)())

  override def run(spark: SparkSession): Seq[Row] = {
    val state = TableRewrite.forTable(spark, tableName).state(spark, tableName)
    Seq(Row(state.token, state.pending))
  }
}
