"""TPC-H data generation, the 22 queries with qgen parameters, variants and streams."""
