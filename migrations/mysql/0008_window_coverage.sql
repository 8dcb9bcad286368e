-- What each window's target earned and lacks (0021_window_coverage.sql in Postgres).
ALTER TABLE snapshots
    ADD COLUMN expected_samples BIGINT NULL,
    ADD COLUMN lost_overflow BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN lost_throttled BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN lost_paused BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN lost_undiscovered BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN lost_transport BIGINT NOT NULL DEFAULT 0;
