package org.apache.spark.sql.sparkclustering
package stats

import org.junit.Assert._
import org.junit.Test

/** Which parquet writers leave a float / double maximum that proves the file's maximum: parquet-mr
 *  1.10 to 1.17, whose NaN becomes the chunk's maximum (and the reader then drops the chunk's bounds). */
class ParquetFootersTest {

  @Test def parquetMrFrom110To117FoldsNaNIntoTheMax(): Unit = {
    Seq("parquet-mr version 1.10.0 (build 031a6654009e3b82020012a18434c582bd74c73a)",
      "parquet-mr version 1.13.1 (build db4183109d5b734ec5930d870cdae161e408ddba)",
      "parquet-mr version 1.16.0 (build 0e1b1dc2bd9a0e37ec41b9d8e1f1d5a4a2b6bc3e)",
      "parquet-mr version 1.17.0").foreach(w => assertTrue(w, ParquetFooters.writerFoldsNaNIntoMax(w)))
  }

  @Test def otherWritersDoNot(): Unit = {
    // 1.9 compared with `>` (a NaN after the first value is skipped); 1.18 leaves NaN out and counts it
    Seq("parquet-mr version 1.9.0 (build 38262e2c80015d0935dad20f8e18f2d6f9fbd03c)",
      "parquet-mr version 1.18.0 (build abc)", "parquet-mr version 2.0.0", "parquet-cpp-arrow version 17.0.0",
      "parquet-rs version 53.0.0", "DuckDB version v1.1.3 (build 19864453f7)", "impala version 4.0",
      "parquet-mr version 1.1x.0", "", null).foreach(w => assertFalse(String.valueOf(w),
      ParquetFooters.writerFoldsNaNIntoMax(w)))
  }
}
