-- Detection on a run (0022_run_detections.sql in Postgres).
CREATE TABLE run_detections (
    run_id          BINARY(16)   NOT NULL,
    rule_id         VARCHAR(255) NOT NULL,
    share           DOUBLE       NOT NULL,
    threshold_pct   DOUBLE       NOT NULL,
    samples_matched BIGINT       NOT NULL,
    samples_total   BIGINT       NOT NULL,
    stacks          JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    detail          JSON         NOT NULL DEFAULT ('null'),
    hosts           JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    evaluated_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (run_id, rule_id),
    KEY run_detections_rule (rule_id),
    CONSTRAINT run_detections_run_fk FOREIGN KEY (run_id)
        REFERENCES runs (id) ON DELETE CASCADE,
    CONSTRAINT run_detections_rule_fk FOREIGN KEY (rule_id)
        REFERENCES rules (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Postgres: a partial index where ended and not detected.
ALTER TABLE runs
    ADD COLUMN detected_at DATETIME(6),
    ADD KEY runs_awaiting_detection (detected_at, ended_at);
-- Runs that ended before this version raise no alerts now.
UPDATE runs SET detected_at = ended_at WHERE ended_at IS NOT NULL;

ALTER TABLE alert_deliveries
    ADD COLUMN run_id BINARY(16),
    ADD COLUMN hosts JSON NOT NULL DEFAULT (JSON_ARRAY());
