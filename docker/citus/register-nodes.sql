-- Run by the citus-nodes service of docker-compose.citus.yml on the coordinator, once the coordinator
-- and both workers are healthy. Safe to run again: citus_add_node returns the id of a node already
-- there, and citus_set_coordinator_host updates the coordinator's entry.
SELECT citus_set_coordinator_host('coordinator', 5432);
SELECT citus_add_node('worker-1', 5432);
SELECT citus_add_node('worker-2', 5432);
SELECT nodename, nodeport, noderole FROM pg_dist_node ORDER BY nodeid;
