package org.apache.spark.sql.sparkclustering;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

import org.apache.spark.sql.SparkSessionExtensions;

import scala.Function1;
import scala.runtime.BoxedUnit;

/**
 * What Spark loads (spark.sql.extensions=org.apache.spark.sql.sparkclustering.SparkClusteringExtensions).
 *
 * The jar is built once per Spark line (udfs/scala/build_jar.py), against that line's Spark internals
 * and Scala. In another line its classes would load and then fail in the middle of a query (a
 * NoSuchMethodError at planning). So before anything else loads, this class, written in Java so that
 * it loads under any Scala, compares the running Spark and Scala with what the jar was built for
 * (the resource spark-clustering-build.properties) and stops the session's start with an error
 * naming both and the jar to load instead. Then it hands over to SparkClusteringInjections.
 */
public final class SparkClusteringExtensions implements Function1<SparkSessionExtensions, BoxedUnit> {

  @Override
  public BoxedUnit apply(SparkSessionExtensions extensions) {
    checkSparkLine();
    SparkClusteringInjections.inject(extensions);
    return BoxedUnit.UNIT;
  }

  static void checkSparkLine() {
    Properties built = load(SparkClusteringExtensions.class, "/spark-clustering-build.properties");
    Properties spark = load(SparkSessionExtensions.class, "/spark-version-info.properties");
    Properties scala = load(Function1.class, "/library.properties");
    String builtLine = built.getProperty("spark.line", "");
    String builtScala = built.getProperty("scala.binary", "");
    String jar = built.getProperty("jar", "spark-clustering-udfs");
    String sparkVersion = spark.getProperty("version", "");
    String scalaVersion = scala.getProperty("version.number", "");
    String runningLine = prefix(sparkVersion, 2);
    String runningScala = prefix(scalaVersion, 2);
    if (builtLine.isEmpty()) {
      throw new IllegalStateException("spark_clustering: " + jar + " has no spark-clustering-build.properties: "
          + "build it with udfs/scala/build_jar.py");
    }
    if (runningLine.equals(builtLine) && (runningScala.isEmpty() || runningScala.equals(builtScala))) {
      return;
    }
    String supported = built.getProperty("spark.lines", "");
    String want = "spark-clustering-udfs_" + runningLine + "_" + runningScala + ".jar";
    String instead = (" " + supported.replace(",", " ") + " ").contains(" " + runningLine + " ")
        ? "load " + want + " instead (python udfs/scala/build_jar.py --line " + runningLine + " builds it)"
        : "the package has no jar for Spark " + runningLine + " (it is built for Spark " + supported.replace(",", ", ")
            + ")";
    throw new IllegalStateException("spark_clustering: " + jar + " is built for Spark " + builtLine + " (Scala "
        + builtScala + "), but this is Spark " + sparkVersion + " (Scala " + scalaVersion + "): " + instead
        + "; remove it from spark.sql.extensions to start without the package's functions");
  }

  /** `major.minor` of a version. */
  private static String prefix(String version, int parts) {
    String[] p = version.split("\\.");
    if (p.length < parts) {
      return version;
    }
    return p[0] + "." + p[1];
  }

  private static Properties load(Class<?> anchor, String resource) {
    Properties p = new Properties();
    try (InputStream in = anchor.getResourceAsStream(resource)) {
      if (in != null) {
        p.load(in);
      }
    } catch (IOException e) {
      // an unreadable resource is an empty one: the check then names what it could not read
    }
    return p;
  }
}
