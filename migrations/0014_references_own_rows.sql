-- The reference triggers of 0012 no longer lock rows the checking
-- transaction inserted itself.
--
-- Ingest inserts a batch's snapshot headers and then, in the same
-- transaction, their samples and threads: each of those statements locked
-- every header again (`for key share`), which writes the row and a WAL
-- record per header, about a tenth of the time of a batch's samples `COPY`.
-- A row whose `xmin` is the checking transaction's own id was inserted (or
-- last updated) by it and is not committed, so no other transaction can
-- see it to delete it or change its key: the lock protects nothing. Such
-- rows are only counted; all others are locked as before. Rows written by
-- a subtransaction carry its own id and are locked as before (harmless,
-- just not skipped). A row the transaction inserted and then deleted is
-- not visible, so it is still reported missing.

create or replace function lock_referenced(target text, ids anyarray) returns void
language plpgsql as $$
declare
    own bigint;
    locked bigint := 0;
begin
    execute format(
        'select count(*) from %I t where t.id = any($1) and t.xmin = pg_current_xact_id()::xid',
        target)
        into own using ids;
    if own < cardinality(ids) then
        execute format(
            'select count(*) from (select 1 from %I t
               where t.id = any($1) and t.xmin <> pg_current_xact_id()::xid
               for key share of t) f',
            target)
            into locked using ids;
    end if;
    if own + locked < cardinality(ids) then
        raise foreign_key_violation using
            message = format('%s referenced row(s) of %s missing',
                             cardinality(ids) - own - locked, target),
            table = target;
    end if;
end
$$;
