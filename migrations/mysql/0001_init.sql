-- ODP schema for MariaDB 10.11+ and MySQL 8.0.16+ (InnoDB): the end state of
-- the Postgres migrations 0001..0015 in one file. See docs/mysql-schema.md
-- for how each Postgres feature maps and what the store must do instead.
--
-- Conventions:
-- * uuid -> BINARY(16) (sqlx encodes uuid::Uuid as its 16 bytes);
-- * timestamptz -> DATETIME(6) holding UTC (sqlx sets time_zone '+00:00' on
--   every connection, so CURRENT_TIMESTAMP(6) defaults are UTC too);
-- * text -> VARCHAR(n) where indexed or an enumeration with a CHECK, else TEXT;
-- * jsonb and arrays (text[], uuid[]) -> JSON;
-- * bytea -> LONGBLOB (MEDIUMBLOB for a stack's frame ids);
-- * constraint and index names are those Postgres gave (explicit or
--   generated), so errors name the same constraints.
-- Tables take the database's character set and collation, which must be
-- utf8mb4 and case-sensitive like Postgres' text, but not a `_bin` collation
-- (sqlx 0.8 reads `_bin` columns as bytes, not strings): create the database
-- with COLLATE utf8mb4_uca1400_as_cs (MariaDB, as devstack does) or
-- utf8mb4_0900_as_cs (MySQL 8). The first statements below refuse anything
-- else.
-- Postgres partial unique indexes become a STORED generated column that is
-- NULL outside the index's predicate, with a UNIQUE index over it (NULLs
-- never collide). The reference triggers of 0012/0014 become InnoDB foreign
-- keys with the behaviour the original keys had.

-- Guard: a database whose default is not utf8mb4 (the 4-byte character
-- fails, 1366, naming the column) or not case-sensitive ('A' collides with
-- 'a', 1062, naming the key) stops the migration here, before any table
-- exists. A temporary table takes the database's defaults as the tables
-- below do, and leaves nothing behind.
DROP TEMPORARY TABLE IF EXISTS odp_database_defaults;
CREATE TEMPORARY TABLE odp_database_defaults (
    database_collation_must_be_case_sensitive VARCHAR(1) NOT NULL,
    database_charset_must_be_utf8mb4          VARCHAR(1) NOT NULL,
    UNIQUE KEY database_collation_must_be_case_sensitive (database_collation_must_be_case_sensitive)
) ENGINE=InnoDB;
INSERT INTO odp_database_defaults VALUES ('a', X'F09F94A5'), ('A', X'F09F94A5');
DROP TEMPORARY TABLE odp_database_defaults;

-- Profile requests (0001, 0003, 0007, 0013).
CREATE TABLE profiles (
    id              BINARY(16)   NOT NULL,
    host            VARCHAR(253) NOT NULL,
    target          JSON         NOT NULL,
    `mode`          VARCHAR(16)  NOT NULL DEFAULT 'cpu',
    duration_ms     BIGINT       NOT NULL,
    frequency_hz    INT          NOT NULL,
    status          VARCHAR(16)  NOT NULL,
    status_reason   TEXT,
    requested_by    VARCHAR(255) NOT NULL,
    event           VARCHAR(32),
    agent_id        VARCHAR(255),
    created_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    started_at      DATETIME(6),
    finished_at     DATETIME(6),
    service         VARCHAR(253) NOT NULL DEFAULT '',
    idempotency_key VARCHAR(200),
    labels          JSON         NOT NULL DEFAULT (JSON_OBJECT()),
    options         JSON         NOT NULL DEFAULT (JSON_OBJECT()),
    -- profiles_one_live_per_target: the SHA-256 of the target (as the
    -- engine prints it) while the profile is live, else NULL.
    live_target_key BINARY(32) AS (
        CASE WHEN status IN ('requested', 'dispatched', 'running')
             THEN UNHEX(SHA2(JSON_EXTRACT(target, '$'), 256)) END) STORED,
    PRIMARY KEY (id),
    CONSTRAINT profiles_status_check CHECK (status IN
        ('requested', 'dispatched', 'running', 'finished', 'stopped', 'failed', 'expired')),
    -- Postgres: unique (requested_by, idempotency_key) where idempotency_key
    -- is not null; a plain unique index is the same, NULL keys never collide.
    UNIQUE KEY profiles_idempotency (requested_by, idempotency_key),
    -- Postgres: unique (host, mode, target) where status is live.
    UNIQUE KEY profiles_one_live_per_target (host, `mode`, live_target_key),
    KEY profiles_host_status (host, status),
    KEY profiles_created_at (created_at DESC),
    KEY profiles_service_created (service, created_at DESC),
    KEY profiles_created (created_at, id)
    -- profiles_labels (GIN over labels): no MySQL equivalent; label filters
    -- use JSON_CONTAINS(labels, ?) on rows the other conditions select.
) ENGINE=InnoDB;

-- Frames and stacks stored as rows before profile blocks (0001, 0009).
CREATE TABLE frames (
    id         BINARY(16) NOT NULL,
    `function` TEXT       NOT NULL,
    module     TEXT       NOT NULL,
    file       TEXT,
    line       INT,
    PRIMARY KEY (id)
) ENGINE=InnoDB;

CREATE TABLE stacks (
    id        BINARY(16)  NOT NULL,
    -- Frame ids, root first, as concatenated 16-byte values.
    frame_ids MEDIUMBLOB  NOT NULL,
    -- Postgres: default clock_timestamp(); CURRENT_TIMESTAMP(6) is the
    -- statement's start, not the transaction's, which is what 0009 needs.
    stored_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    KEY stacks_stored_at (stored_at),
    CONSTRAINT stacks_frame_ids_check
        CHECK (LENGTH(frame_ids) % 16 = 0 AND LENGTH(frame_ids) > 0)
) ENGINE=InnoDB;

-- One row per agent window (0001, 0009, 0015).
CREATE TABLE snapshots (
    id             BIGINT       NOT NULL AUTO_INCREMENT,
    profile_id     BINARY(16)   NOT NULL,
    agent_id       VARCHAR(255) NOT NULL,
    `sequence`     BIGINT       NOT NULL,
    host           VARCHAR(253) NOT NULL,
    window_start   DATETIME(6)  NOT NULL,
    window_end     DATETIME(6)  NOT NULL,
    event          VARCHAR(32)  NOT NULL,
    period         BIGINT       NOT NULL,
    frequency_hz   INT          NOT NULL,
    samples        BIGINT       NOT NULL,
    ingested_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    merged_windows INT          NOT NULL DEFAULT 1,
    block          LONGBLOB,
    compacted      BOOLEAN      NOT NULL DEFAULT FALSE,
    PRIMARY KEY (id),
    UNIQUE KEY snapshots_agent_id_profile_id_sequence_key (agent_id, profile_id, `sequence`),
    KEY snapshots_profile (profile_id, window_start),
    KEY snapshots_window_end (window_end),
    -- Postgres: (profile_id) where not compacted.
    KEY snapshots_uncompacted (compacted, profile_id),
    CONSTRAINT snapshots_merged_windows_check CHECK (merged_windows >= 1)
) ENGINE=InnoDB;

-- Legacy sample rows. Postgres checks these references with statement
-- triggers (0012, 0014); here they are the foreign keys they replaced:
-- a missing snapshot or stack is refused (1452), a referenced stack cannot
-- be deleted (1451), a deleted snapshot takes its rows with it.
CREATE TABLE samples (
    snapshot_id BIGINT     NOT NULL,
    stack_id    BINARY(16) NOT NULL,
    tid         INT        NOT NULL,
    `count`     BIGINT     NOT NULL,
    PRIMARY KEY (snapshot_id, stack_id, tid),
    KEY samples_stack (stack_id),
    CONSTRAINT samples_count_check CHECK (`count` > 0),
    CONSTRAINT samples_snapshot_id_fkey FOREIGN KEY (snapshot_id)
        REFERENCES snapshots (id) ON DELETE CASCADE,
    CONSTRAINT samples_stack_id_fkey FOREIGN KEY (stack_id)
        REFERENCES stacks (id) ON DELETE NO ACTION
) ENGINE=InnoDB;

CREATE TABLE snapshot_threads (
    snapshot_id BIGINT NOT NULL,
    tid         INT    NOT NULL,
    name        TEXT   NOT NULL,
    PRIMARY KEY (snapshot_id, tid),
    CONSTRAINT snapshot_threads_snapshot_id_fkey FOREIGN KEY (snapshot_id)
        REFERENCES snapshots (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Heartbeats (0001). Postgres text[] and uuid[] are JSON arrays (of strings;
-- uuids hyphenated), only ever written and read whole.
CREATE TABLE agents (
    host             VARCHAR(253) NOT NULL,
    agent_id         VARCHAR(255) NOT NULL,
    version          TEXT         NOT NULL,
    plugins          JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    running_profiles JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    last_seen        DATETIME(6)  NOT NULL,
    PRIMARY KEY (host, agent_id),
    CONSTRAINT agents_plugins_array CHECK (JSON_TYPE(plugins) = 'ARRAY'),
    CONSTRAINT agents_running_profiles_array CHECK (JSON_TYPE(running_profiles) = 'ARRAY')
) ENGINE=InnoDB;

CREATE TABLE profile_events (
    id         BIGINT       NOT NULL AUTO_INCREMENT,
    profile_id BINARY(16),
    host       VARCHAR(253) NOT NULL,
    agent_id   VARCHAR(255) NOT NULL,
    kind       VARCHAR(64)  NOT NULL,
    `at`       DATETIME(6)  NOT NULL,
    body       JSON         NOT NULL,
    PRIMARY KEY (id),
    KEY profile_events_profile (profile_id, `at`)
) ENGINE=InnoDB;

-- Detection rules and what they found (0002, 0010).
CREATE TABLE rules (
    id                 VARCHAR(255) NOT NULL,
    title              TEXT         NOT NULL,
    explanation        TEXT         NOT NULL,
    fix                TEXT         NOT NULL,
    link               TEXT         NOT NULL,
    kind               VARCHAR(64)  NOT NULL,
    spec               JSON         NOT NULL,
    threshold_pct      DOUBLE       NOT NULL,
    service_thresholds JSON         NOT NULL DEFAULT (JSON_OBJECT()),
    enabled            BOOLEAN      NOT NULL DEFAULT TRUE,
    source             VARCHAR(8)   NOT NULL DEFAULT 'user',
    created_at         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at         DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    CONSTRAINT rules_threshold_pct_check CHECK (threshold_pct >= 0 AND threshold_pct <= 100),
    CONSTRAINT rules_source_check CHECK (source IN ('seed', 'user'))
) ENGINE=InnoDB;

-- No foreign key to profiles, as in Postgres: detections of profiles the
-- API never recorded are kept.
CREATE TABLE detections (
    profile_id         BINARY(16)   NOT NULL,
    rule_id            VARCHAR(255) NOT NULL,
    share              DOUBLE       NOT NULL,
    threshold_pct      DOUBLE       NOT NULL,
    samples_matched    BIGINT       NOT NULL,
    samples_total      BIGINT       NOT NULL,
    stacks             JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    first_evaluated_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    last_evaluated_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    -- JSON null, as Postgres' default 'null'::jsonb.
    detail             JSON         NOT NULL DEFAULT ('null'),
    PRIMARY KEY (profile_id, rule_id),
    KEY detections_rule (rule_id, last_evaluated_at DESC),
    CONSTRAINT detections_rule_id_fkey FOREIGN KEY (rule_id)
        REFERENCES rules (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Alerts (0004, 0008, 0011).
CREATE TABLE alert_channels (
    id              BINARY(16)   NOT NULL,
    name            VARCHAR(253) NOT NULL,
    kind            VARCHAR(16)  NOT NULL DEFAULT 'webhook',
    url             TEXT         NOT NULL,
    secret          TEXT         NOT NULL DEFAULT (''),
    service_pattern TEXT         NOT NULL DEFAULT ('*'),
    enabled         BOOLEAN      NOT NULL DEFAULT TRUE,
    created_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    email_from      TEXT,
    -- Postgres text[]: a JSON array of addresses.
    email_to        JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    PRIMARY KEY (id),
    UNIQUE KEY alert_channels_name_key (name),
    CONSTRAINT alert_channels_kind_check CHECK (kind IN ('webhook', 'email')),
    CONSTRAINT alert_channels_email_to_array CHECK (JSON_TYPE(email_to) = 'ARRAY'),
    CONSTRAINT alert_channels_email_addresses
        CHECK (kind <> 'email' OR (email_from IS NOT NULL AND JSON_LENGTH(email_to) > 0))
) ENGINE=InnoDB;

CREATE TABLE alert_deliveries (
    id              BINARY(16)   NOT NULL,
    profile_id      BINARY(16)   NOT NULL,
    rule_id         VARCHAR(255) NOT NULL,
    channel_id      BINARY(16)   NOT NULL,
    service         VARCHAR(253) NOT NULL,
    host            VARCHAR(253) NOT NULL,
    share           DOUBLE       NOT NULL,
    threshold_pct   DOUBLE       NOT NULL,
    stacks          JSON         NOT NULL DEFAULT (JSON_ARRAY()),
    detected_at     DATETIME(6)  NOT NULL,
    status          VARCHAR(16)  NOT NULL DEFAULT 'pending',
    attempts        INT          NOT NULL DEFAULT 0,
    next_attempt_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    created_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    finished_at     DATETIME(6),
    PRIMARY KEY (id),
    UNIQUE KEY alert_deliveries_profile_id_rule_id_channel_id_key (profile_id, rule_id, channel_id),
    -- Postgres: (next_attempt_at) where status = 'pending'.
    KEY alert_deliveries_due (status, next_attempt_at),
    KEY alert_deliveries_channel (channel_id, created_at DESC, id DESC),
    -- InnoDB needs an index led by each foreign key's column.
    KEY alert_deliveries_rule (rule_id),
    CONSTRAINT alert_deliveries_status_check CHECK (status IN ('pending', 'delivered', 'failed')),
    CONSTRAINT alert_deliveries_rule_id_fkey FOREIGN KEY (rule_id)
        REFERENCES rules (id) ON DELETE CASCADE,
    CONSTRAINT alert_deliveries_channel_id_fkey FOREIGN KEY (channel_id)
        REFERENCES alert_channels (id) ON DELETE CASCADE
) ENGINE=InnoDB;

CREATE TABLE alert_attempts (
    delivery_id  BINARY(16)  NOT NULL,
    attempt      INT         NOT NULL,
    attempted_at DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    status_code  INT COMMENT 'HTTP status (webhook) or SMTP reply code (email) when the server answered',
    error        TEXT,
    success      BOOLEAN     NOT NULL,
    PRIMARY KEY (delivery_id, attempt),
    CONSTRAINT alert_attempts_delivery_id_fkey FOREIGN KEY (delivery_id)
        REFERENCES alert_deliveries (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Scheduled profiling (0005, 0013).
CREATE TABLE schedules (
    id            BINARY(16)   NOT NULL,
    name          VARCHAR(253) NOT NULL,
    service       VARCHAR(253) NOT NULL,
    host          VARCHAR(253) NOT NULL,
    target        JSON         NOT NULL,
    `mode`        VARCHAR(16)  NOT NULL DEFAULT 'cpu',
    duration_secs INT          NOT NULL,
    frequency_hz  INT          NOT NULL,
    window_secs   INT,
    cron          TEXT         NOT NULL,
    timezone      VARCHAR(64)  NOT NULL DEFAULT 'UTC',
    enabled       BOOLEAN      NOT NULL DEFAULT TRUE,
    created_by    TEXT         NOT NULL,
    created_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at    DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    next_run_at   DATETIME(6),
    last_run_at   DATETIME(6),
    options       JSON         NOT NULL DEFAULT (JSON_OBJECT()),
    PRIMARY KEY (id),
    UNIQUE KEY schedules_name_key (name),
    -- Postgres: (next_run_at) where enabled.
    KEY schedules_due (enabled, next_run_at),
    CONSTRAINT schedules_duration_secs_check CHECK (duration_secs > 0),
    CONSTRAINT schedules_frequency_hz_check CHECK (frequency_hz > 0),
    CONSTRAINT schedules_window_secs_check CHECK (window_secs > 0)
) ENGINE=InnoDB;

CREATE TABLE schedule_runs (
    id            BIGINT      NOT NULL AUTO_INCREMENT,
    schedule_id   BINARY(16)  NOT NULL,
    scheduled_for DATETIME(6) NOT NULL,
    fired_at      DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    outcome       VARCHAR(16) NOT NULL,
    profile_id    BINARY(16),
    detail        TEXT,
    PRIMARY KEY (id),
    UNIQUE KEY schedule_runs_schedule_id_scheduled_for_key (schedule_id, scheduled_for),
    CONSTRAINT schedule_runs_outcome_check
        CHECK (outcome IN ('started', 'missed', 'skipped_busy', 'failed')),
    CONSTRAINT schedule_runs_schedule_id_fkey FOREIGN KEY (schedule_id)
        REFERENCES schedules (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Deploy, undeploy and stop requests (0006).
CREATE TABLE control_requests (
    id               BINARY(16)   NOT NULL,
    kind             VARCHAR(16)  NOT NULL,
    host             VARCHAR(253) NOT NULL,
    profile_id       BINARY(16),
    `mode`           VARCHAR(16),
    requested_by     TEXT         NOT NULL,
    status           VARCHAR(16)  NOT NULL,
    status_reason    TEXT,
    command_id       BINARY(16),
    created_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    -- control_requests_one_open_deploy: the host while a deploy is open.
    open_deploy_host VARCHAR(253) AS (
        CASE WHEN kind = 'deploy' AND status IN ('requested', 'dispatched', 'running')
             THEN host END) STORED,
    PRIMARY KEY (id),
    KEY control_requests_created (created_at DESC),
    -- Postgres: (kind, host) where status is open.
    KEY control_requests_open (kind, host, status),
    -- Postgres: unique (host) where kind = 'deploy' and status is open.
    UNIQUE KEY control_requests_one_open_deploy (open_deploy_host),
    CONSTRAINT control_requests_kind_check CHECK (kind IN ('deploy', 'undeploy', 'stop')),
    CONSTRAINT control_requests_status_check CHECK (status IN
        ('requested', 'dispatched', 'running', 'finished', 'failed'))
) ENGINE=InnoDB;

-- Re-analysis jobs (0010).
CREATE TABLE rule_reanalyses (
    id                BINARY(16)   NOT NULL,
    rule_id           VARCHAR(255) NOT NULL,
    requested_by      TEXT         NOT NULL,
    requested_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    status            VARCHAR(16)  NOT NULL DEFAULT 'pending',
    profiles_total    BIGINT,
    profiles_done     BIGINT       NOT NULL DEFAULT 0,
    cursor_created_at DATETIME(6),
    cursor_id         BINARY(16),
    -- Postgres: '-infinity'; DATETIME's smallest value stands for it.
    lease_until       DATETIME(6)  NOT NULL DEFAULT '1000-01-01 00:00:00.000000',
    started_at        DATETIME(6),
    finished_at       DATETIME(6),
    error             TEXT,
    PRIMARY KEY (id),
    -- Postgres: (requested_at) where status in ('pending', 'running').
    KEY rule_reanalyses_open (status, requested_at),
    KEY rule_reanalyses_rule (rule_id, requested_at DESC),
    CONSTRAINT rule_reanalyses_status_check
        CHECK (status IN ('pending', 'running', 'finished', 'failed')),
    CONSTRAINT rule_reanalyses_rule_id_fkey FOREIGN KEY (rule_id)
        REFERENCES rules (id) ON DELETE CASCADE
) ENGINE=InnoDB;

-- Profile blocks and service rollups (0015).
CREATE TABLE profile_blocks (
    profile_id BINARY(16)  NOT NULL,
    windows    INT         NOT NULL,
    samples    BIGINT      NOT NULL,
    block      LONGBLOB    NOT NULL,
    built_at   DATETIME(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    rollup     VARCHAR(8)  NOT NULL DEFAULT 'pending',
    PRIMARY KEY (profile_id),
    -- Postgres: (profile_id) where rollup = 'pending'; the pending ones are
    -- read in built_at order.
    KEY profile_blocks_to_roll_up (rollup, built_at),
    CONSTRAINT profile_blocks_windows_check CHECK (windows >= 0),
    CONSTRAINT profile_blocks_samples_check CHECK (samples >= 0),
    CONSTRAINT profile_blocks_rollup_check CHECK (rollup IN ('pending', 'rolled', 'alone'))
) ENGINE=InnoDB;

CREATE TABLE service_rollups (
    service  VARCHAR(253) NOT NULL,
    `hour`   DATETIME(6)  NOT NULL,
    windows  INT          NOT NULL,
    samples  BIGINT       NOT NULL,
    block    LONGBLOB     NOT NULL,
    built_at DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (service, `hour`),
    CONSTRAINT service_rollups_windows_check CHECK (windows >= 0),
    CONSTRAINT service_rollups_samples_check CHECK (samples >= 0)
) ENGINE=InnoDB;
