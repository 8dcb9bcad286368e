-- Retention and downsampling rewrite one hour's rollups of every service
-- (`where hour in (…) for update`). The key is (service, hour), so without
-- an index led by `hour` that locking read scans the whole table: InnoDB
-- locks every row it scans (and, under REPEATABLE READ, the gaps) until
-- the batch commits, and a compaction adding to another hour's rollup
-- waits. With this index (InnoDB appends the key: (hour, service)) the
-- read visits only the hour's rows; the store also runs those
-- transactions READ COMMITTED, so it locks no gaps.
CREATE INDEX service_rollups_hour ON service_rollups (`hour`);
