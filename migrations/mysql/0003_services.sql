-- Services and the agents' host labels (0016_services.sql in Postgres):
-- jsonb is JSON, text a bounded VARCHAR.
CREATE TABLE services (
    name        VARCHAR(253) NOT NULL,
    target      JSON         NOT NULL,
    owner_team  VARCHAR(255),
    description TEXT,
    created_by  VARCHAR(255) NOT NULL,
    created_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    updated_at  DATETIME(6)  NOT NULL DEFAULT CURRENT_TIMESTAMP(6),
    PRIMARY KEY (name)
) ENGINE=InnoDB;

ALTER TABLE agents
    ADD COLUMN labels JSON NOT NULL DEFAULT (JSON_OBJECT()),
    ADD COLUMN services JSON NOT NULL DEFAULT (JSON_ARRAY()),
    ADD COLUMN services_digest VARCHAR(64),
    ADD CONSTRAINT agents_labels_object CHECK (JSON_TYPE(labels) = 'OBJECT'),
    ADD CONSTRAINT agents_services_array CHECK (JSON_TYPE(services) = 'ARRAY');
