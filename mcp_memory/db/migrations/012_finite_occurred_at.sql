-- Before occurred_at was checked against asyncpg's infinity instants, a store given
-- 0001-01-01T00:00:00Z or 9999-12-31T23:59:59.999999Z (in UTC) wrote -infinity or infinity, which the
-- driver reads back as a time without a zone: every later recall of that session failed as an
-- internal error. Such a memory takes the time it was stored instead (its created_at), the only
-- time known for it. The update bumps memory_stats.version of those sessions (the triggers of
-- migration 006), so any copy of a session's vectors held in memory is rebuilt.
UPDATE memories SET occurred_at = created_at WHERE occurred_at IN ('-infinity', 'infinity');
