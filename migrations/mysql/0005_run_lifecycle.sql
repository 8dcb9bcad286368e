-- Run lifecycle (0018_run_lifecycle.sql in Postgres): each chosen host's
-- start recorded, and schedules that start runs.
CREATE TABLE run_hosts (
    run_id     BINARY(16)   NOT NULL,
    host       VARCHAR(253) NOT NULL,
    profile_id BINARY(16),
    started    BOOLEAN      NOT NULL,
    reason     TEXT,
    blocked_by BINARY(16),
    created_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (run_id, host),
    CONSTRAINT run_hosts_run_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE CASCADE
) ENGINE=InnoDB;

ALTER TABLE schedules ADD COLUMN run_spec JSON;

ALTER TABLE schedule_runs
    ADD COLUMN run_id BINARY(16),
    ADD KEY schedule_runs_run (run_id),
    ADD CONSTRAINT schedule_runs_run_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE SET NULL;
