-- A parallel aggregate: count and mean magnitude of the sources in a 10° band of declination.
-- No index covers dec, so the plan is Finalize Aggregate <- Gather <- Partial Aggregate <-
-- Parallel Seq Scan over the whole table: every transaction wants max_parallel_workers_per_gather
-- workers, from the server's max_parallel_workers for all sessions together.
\set lo random(-90, 80)
\set hi :lo + 10
SELECT count(*), avg(mag) FROM sources WHERE dec BETWEEN :lo AND :hi;
