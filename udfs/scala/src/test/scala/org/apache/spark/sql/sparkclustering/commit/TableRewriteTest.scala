package org.apache.spark.sql.sparkclustering
package commit

import org.junit.Assert._
import org.junit.Test

/** The pure parts of TableRewrite: the table kind decided from a catalog entry's provider, the
 *  replaced-file entries of table_rewrite_commit, and the arguments a kind requires. */
class TableRewriteTest {

  private def message(f: => Any): String =
    try { f; fail("no error"); "" } catch { case e: RuntimeException => e.getMessage }

  @Test def theProviderDecidesTheKind(): Unit = {
    assertEquals(TableKind.Plain, TableKind.of("db.t", Some("parquet"), Map.empty))
    assertEquals(TableKind.Plain, TableKind.of("db.t", Some("ORC"), Map.empty))
    assertEquals(TableKind.Delta, TableKind.of("db.t", Some("delta"), Map.empty))
    assertEquals(TableKind.Iceberg, TableKind.of("db.t", Some("iceberg"), Map.empty))
    // Iceberg's session catalog keeps its tables in the Hive metastore with its own mark
    assertEquals(TableKind.Iceberg, TableKind.of("db.t", Some("hive"), Map("table_type" -> "ICEBERG")))
  }

  @Test def anyOtherProviderIsRefusedNamingTheTable(): Unit = {
    val csv = message(TableKind.of("db.t", Some("csv"), Map.empty))
    assertTrue(csv, csv.contains("db.t is a table of provider 'csv'"))
    assertTrue(csv, csv.contains("parquet, orc, delta and iceberg"))
    val hive = message(TableKind.of("db.h", Some("hive"), Map("table_type" -> "EXTERNAL_TABLE")))
    assertTrue(hive, hive.contains("db.h is a table of provider 'hive'"))
    val none = message(TableKind.of("db.v", None, Map.empty))
    assertTrue(none, none.contains("provider 'none'"))
  }

  @Test def aReplacedFileIsSizeMtimeAndPath(): Unit = {
    assertEquals(ReplacedFile("file:/w/t/part-0.parquet", 120L, 1700000000000L),
      ReplacedFile.parse("120:1700000000000:file:/w/t/part-0.parquet"))
    // the path keeps its own colons
    assertEquals(ReplacedFile("s3a://b/t/x=1:2/p.parquet", 5L, 7L), ReplacedFile.parse("5:7:s3a://b/t/x=1:2/p.parquet"))
    for (bad <- Seq("file:/w/t/part-0.parquet", "120:file:/w/t/p", "a:1:/p", "1:2:", "")) {
      val text = message(ReplacedFile.parse(bad))
      assertTrue(text, text.contains(s"replaced file '$bad' must be '<size>:<modification time>:<path>'"))
    }
  }

  @Test def aKindSaysWhichArgumentItMisses(): Unit = {
    val request = RewriteRequest("db.t", "token", "db.t__sc_recluster", "/w/t/sc-l1-r", "sc-l1-r", None, Some(10L),
      None, Seq("a"), Seq.empty)
    assertEquals(10L, request.required(request.validatedRows, "validated_rows", TableKind.Delta))
    val text = message(request.required(request.readVersion, "read_version", TableKind.Iceberg))
    assertTrue(text, text.contains("read_version must be given: db.t is a table of kind iceberg"))
  }
}
