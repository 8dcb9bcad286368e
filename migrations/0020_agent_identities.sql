-- Agent identities: the public key of each agent the api-server issued a
-- certificate for (deployed by it, or enrolled by an admin), so operators
-- can see and revoke them. Revoked identities' messages are refused.
CREATE TABLE agent_identities (
    id          UUID PRIMARY KEY,
    host        TEXT NOT NULL,
    public_key  TEXT NOT NULL,
    issued_at   TIMESTAMPTZ NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    issued_by   TEXT NOT NULL,
    revoked_at  TIMESTAMPTZ,
    revoked_by  TEXT
);
CREATE INDEX agent_identities_host ON agent_identities (host, issued_at);
CREATE INDEX agent_identities_revoked ON agent_identities (revoked_at) WHERE revoked_at IS NOT NULL;
