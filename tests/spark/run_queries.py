"""Runs the named queries of pt-snap-sql (crates/pt-snap-sql/queries/*.sql) with Spark SQL in
local mode over a Parquet dataset written by `pt-snap export`, and prints their answers as
one JSON document: {name: {"columns": [...], "rows": [[...], ...]}}.

usage: run_queries.py DATASET_DIR QUERIES_DIR
The same SQL text runs here unchanged: tables are views over DATASET_DIR/<table>, whose
job=/rank= directories Spark's partition discovery turns into the columns job and rank.
"""
import json
import os
import sys

from pyspark.sql import SparkSession


def main():
    dataset, queries = sys.argv[1], sys.argv[2]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("pt-snap cross-engine test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    for table in ("events", "blocks", "callstacks", "summary"):
        path = os.path.join(dataset, table)
        if os.path.isdir(path):
            spark.read.parquet(path).createOrReplaceTempView(table)
    answers = {}
    for name in sorted(os.listdir(queries)):
        if not name.endswith(".sql"):
            continue
        with open(os.path.join(queries, name)) as f:
            sql = f.read()
        frame = spark.sql(sql)
        answers[name[: -len(".sql")]] = {
            "columns": frame.columns,
            "rows": [list(row) for row in frame.collect()],
        }
    spark.stop()
    json.dump(answers, sys.stdout)


if __name__ == "__main__":
    main()
