-- audits_session_newest (session, audit_id DESC) held the same columns as the primary key
-- (session, audit_id): a B-tree is read backwards as cheaply as forwards, so list_audits and the
-- page's paging (WHERE session = $1 ... ORDER BY audit_id DESC) use the key, and the second index
-- only cost every audit row (one per recall) an index write and its WAL.
DROP INDEX IF EXISTS audits_session_newest;
