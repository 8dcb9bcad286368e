-- Runs (0017_runs.sql in Postgres).
CREATE TABLE runs (
    id              BINARY(16)   NOT NULL,
    service         VARCHAR(253) NOT NULL,
    selection       JSON         NOT NULL,
    chosen          JSON         NOT NULL,
    stop_rule       JSON,
    max_duration_ms BIGINT       NOT NULL,
    status          VARCHAR(16)  NOT NULL,
    status_reason   TEXT,
    reached_epsilon DOUBLE,
    samples_used    BIGINT,
    requested_by    VARCHAR(255) NOT NULL,
    created_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    ended_at        DATETIME(6),
    PRIMARY KEY (id),
    KEY runs_created (created_at)
) ENGINE=InnoDB;

ALTER TABLE profiles
    ADD COLUMN run_id BINARY(16),
    ADD KEY profiles_run (run_id),
    ADD CONSTRAINT profiles_run_fk FOREIGN KEY (run_id) REFERENCES runs (id) ON DELETE SET NULL;
