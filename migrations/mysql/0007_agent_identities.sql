-- Agent identities (0020_agent_identities.sql in Postgres).
CREATE TABLE agent_identities (
    id          BINARY(16)   NOT NULL,
    host        VARCHAR(253) NOT NULL,
    public_key  VARCHAR(64)  NOT NULL,
    issued_at   DATETIME(6)  NOT NULL,
    expires_at  DATETIME(6)  NOT NULL,
    issued_by   VARCHAR(255) NOT NULL,
    revoked_at  DATETIME(6)  NULL,
    revoked_by  VARCHAR(255) NULL,
    PRIMARY KEY (id),
    KEY agent_identities_host (host, issued_at),
    KEY agent_identities_revoked (revoked_at)
) ENGINE=InnoDB;
