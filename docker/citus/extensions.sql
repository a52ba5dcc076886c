-- Every node (coordinator and workers) has the extensions mcp-memory uses, in its database
-- (docs/scale-out-citus.md, "What you run"). The server creates them on the coordinator too.
CREATE EXTENSION IF NOT EXISTS vector;
CREATE EXTENSION IF NOT EXISTS pg_trgm;
