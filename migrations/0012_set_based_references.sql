-- The references of samples and snapshot_threads, checked once per
-- statement instead of once per row.
--
-- A foreign key checks each inserted row with its own query: ingest writes
-- tens of thousands of samples per batch, and those checks were two thirds
-- of its time in Postgres. The triggers below keep the same guarantees with
-- one query per statement: inserted rows must reference existing snapshots
-- and stacks, which they lock as a foreign key check does (`for key
-- share`), so neither can be deleted until the inserting transaction ends;
-- deleting a stack still referenced fails; deleting a snapshot deletes its
-- samples and threads. Violations raise `foreign_key_violation` (23503),
-- as the foreign keys did, so callers handle them unchanged.
--
-- Their queries run under each statement's own snapshot (read committed),
-- so, as with foreign keys, rows committed meanwhile by a concurrent
-- transaction are seen: a stack deleted after an ingest locked it waits
-- for the ingest to end and then sees its samples; an ingest whose stack
-- was deleted first finds it gone.

alter table samples drop constraint samples_snapshot_id_fkey;
alter table samples drop constraint samples_stack_id_fkey;
alter table snapshot_threads drop constraint snapshot_threads_snapshot_id_fkey;

-- Locks the rows of `target` with the distinct `ids` as a foreign key
-- check does; raises if any is missing.
create function lock_referenced(target text, ids anyarray) returns void
language plpgsql as $$
declare
    found bigint;
begin
    execute format(
        'select count(*) from (select 1 from %I t where t.id = any($1) for key share of t) f',
        target)
        into found using ids;
    if found < cardinality(ids) then
        raise foreign_key_violation using
            message = format('%s referenced row(s) of %s missing', cardinality(ids) - found, target),
            table = target;
    end if;
end
$$;

-- The snapshots (and, for samples, stacks) that `new_rows` reference.
create function samples_references_exist() returns trigger
language plpgsql as $$
begin
    perform lock_referenced('snapshots', array(select distinct snapshot_id from new_rows));
    if TG_TABLE_NAME = 'samples' then
        perform lock_referenced('stacks', array(select distinct stack_id from new_rows));
    end if;
    return null;
end
$$;

create trigger samples_references_on_insert after insert on samples
    referencing new table as new_rows
    for each statement execute function samples_references_exist();
create trigger samples_references_on_update after update on samples
    referencing new table as new_rows
    for each statement execute function samples_references_exist();
create trigger snapshot_threads_references_on_insert after insert on snapshot_threads
    referencing new table as new_rows
    for each statement execute function samples_references_exist();
create trigger snapshot_threads_references_on_update after update on snapshot_threads
    referencing new table as new_rows
    for each statement execute function samples_references_exist();

-- A deleted snapshot's samples and threads go with it (was `on delete
-- cascade`).
create function snapshots_delete_cascade() returns trigger
language plpgsql as $$
begin
    delete from samples s using old_rows o where s.snapshot_id = o.id;
    delete from snapshot_threads t using old_rows o where t.snapshot_id = o.id;
    return null;
end
$$;

create trigger snapshots_delete_cascade after delete on snapshots
    referencing old table as old_rows
    for each statement execute function snapshots_delete_cascade();

-- A stack still referenced by a sample cannot be deleted (was the foreign
-- key's `no action`); stack ids are content hashes and never updated.
create function stacks_still_referenced() returns trigger
language plpgsql as $$
begin
    if exists (select 1 from samples s join old_rows o on o.id = s.stack_id) then
        raise foreign_key_violation using
            message = 'stack still referenced by samples',
            table = 'stacks';
    end if;
    return null;
end
$$;

create trigger stacks_still_referenced after delete on stacks
    referencing old table as old_rows
    for each statement execute function stacks_still_referenced();
