"""TPC-DS: data from tpcgen-cli, the queries from Apache Spark's TPC-DS query files.

Results are derived from TPC-DS and are not comparable to published TPC-DS results.
"""
