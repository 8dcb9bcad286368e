-- Triggers (0025_triggers.sql in Postgres).
CREATE TABLE triggers (
    id               BINARY(16)   NOT NULL,
    service          VARCHAR(253) NOT NULL,
    `condition`      JSON         NOT NULL,
    duration_secs    INT          NOT NULL,
    event            VARCHAR(32)  NOT NULL,
    frequency_hz     INT          NOT NULL,
    cooldown_secs    INT          NOT NULL,
    max_concurrent   INT          NOT NULL,
    hosts            JSON         NOT NULL DEFAULT ('null'),
    enabled          BOOLEAN      NOT NULL DEFAULT TRUE,
    fired            BIGINT       NOT NULL DEFAULT 0,
    held_back        BIGINT       NOT NULL DEFAULT 0,
    last_fired_at    DATETIME(6),
    held_back_since  DATETIME(6),
    held_back_reason TEXT,
    created_by       VARCHAR(255) NOT NULL,
    updated_by       VARCHAR(255) NOT NULL,
    created_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at       DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    KEY triggers_service (service),
    CONSTRAINT triggers_service_fk FOREIGN KEY (service)
        REFERENCES services (name) ON DELETE CASCADE,
    CONSTRAINT triggers_duration CHECK (duration_secs > 0),
    CONSTRAINT triggers_frequency CHECK (frequency_hz > 0),
    CONSTRAINT triggers_cooldown CHECK (cooldown_secs > 0),
    CONSTRAINT triggers_cap CHECK (max_concurrent > 0)
) ENGINE=InnoDB;

CREATE TABLE trigger_firings (
    id            BINARY(16)   NOT NULL,
    trigger_id    BINARY(16)   NOT NULL,
    host          VARCHAR(253) NOT NULL,
    held_since_ms BIGINT       NOT NULL,
    observed      DOUBLE       NOT NULL,
    fired_at      DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    outcome       VARCHAR(16)  NOT NULL,
    reason        TEXT,
    profile_id    BINARY(16),
    PRIMARY KEY (id),
    UNIQUE KEY trigger_firings_report (trigger_id, host, held_since_ms),
    KEY trigger_firings_latest (trigger_id, fired_at),
    CONSTRAINT trigger_firings_trigger_fk FOREIGN KEY (trigger_id)
        REFERENCES triggers (id) ON DELETE CASCADE
) ENGINE=InnoDB;
