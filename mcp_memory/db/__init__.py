"""Storage: the embedded server, the connection pool, migrations and the repository (all SQL)."""
