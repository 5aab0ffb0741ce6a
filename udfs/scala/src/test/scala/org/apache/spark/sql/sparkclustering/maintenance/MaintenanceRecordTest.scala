package org.apache.spark.sql.sparkclustering
package maintenance

import org.junit.Assert._
import org.junit.Test

/** save_maintenance_record takes a JSON object only: a record is read back as a dict. */
class MaintenanceRecordTest {

  @Test def onlyAJsonObjectIsARecord(): Unit = {
    assertTrue(MaintenanceRecord.isObject("""{"state": "delta:x:3", "history": []}"""))
    assertTrue(MaintenanceRecord.isObject("{}"))
    for (bad <- Seq("", "[]", "3", "\"x\"", "null", """{"state": """, "{} {"))
      assertFalse(bad, MaintenanceRecord.isObject(bad))
  }
}
