-- One-time enrollment tokens (0024_enrollment_tokens.sql in Postgres).
CREATE TABLE agent_enrollment_tokens (
    id          BINARY(16)   NOT NULL,
    secret_hash CHAR(64)     NOT NULL,
    host        VARCHAR(253) NOT NULL,
    uses        INT          NOT NULL,
    used        INT          NOT NULL DEFAULT 0,
    created_at  DATETIME(6)  NOT NULL,
    created_by  VARCHAR(255) NOT NULL,
    expires_at  DATETIME(6)  NOT NULL,
    revoked_at  DATETIME(6)  NULL,
    revoked_by  VARCHAR(255) NULL,
    PRIMARY KEY (id),
    UNIQUE KEY agent_enrollment_tokens_secret (secret_hash),
    KEY agent_enrollment_tokens_created (created_at),
    CONSTRAINT agent_enrollment_tokens_uses CHECK (uses > 0),
    CONSTRAINT agent_enrollment_tokens_used CHECK (used >= 0 AND used <= uses)
) ENGINE=InnoDB;

ALTER TABLE agent_identities
    ADD COLUMN enrollment_token BINARY(16) NULL,
    ADD KEY agent_identities_enrollment_token (enrollment_token),
    ADD CONSTRAINT agent_identities_enrollment_token_fk FOREIGN KEY (enrollment_token)
        REFERENCES agent_enrollment_tokens (id);
