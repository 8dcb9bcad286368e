-- Continuous profiles (0023_continuous_profiles.sql in Postgres).
CREATE TABLE continuous_profiles (
    id             BINARY(16)   NOT NULL,
    service        VARCHAR(253) NOT NULL,
    event          VARCHAR(32)  NOT NULL,
    frequency_hz   INT          NOT NULL,
    cpu_budget_ppm INT          NOT NULL,
    hosts          JSON         NOT NULL DEFAULT ('null'),
    enabled        BOOLEAN      NOT NULL DEFAULT TRUE,
    created_by     VARCHAR(255) NOT NULL,
    updated_by     VARCHAR(255) NOT NULL,
    created_at     DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at     DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (id),
    UNIQUE KEY continuous_profiles_service (service),
    CONSTRAINT continuous_profiles_service_fk FOREIGN KEY (service)
        REFERENCES services (name) ON DELETE CASCADE,
    CONSTRAINT continuous_profiles_frequency CHECK (frequency_hz > 0),
    CONSTRAINT continuous_profiles_budget CHECK (cpu_budget_ppm > 0 AND cpu_budget_ppm <= 1000000)
) ENGINE=InnoDB;

-- Postgres: the partial unique index excludes continuous segments; here
-- the generated key is NULL for them.
ALTER TABLE profiles
    ADD COLUMN continuous_id BINARY(16),
    MODIFY COLUMN live_target_key BINARY(32) AS (
        CASE WHEN status IN ('requested', 'dispatched', 'running') AND continuous_id IS NULL
             THEN UNHEX(SHA2(JSON_EXTRACT(target, '$'), 256)) END) STORED,
    ADD KEY profiles_continuous (continuous_id, created_at);
