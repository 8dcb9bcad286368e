-- One-time enrollment tokens (issue 27): an admin creates one for a host,
-- and an agent started with it makes its own key pair and trades the
-- token and the public half for a certificate. Only the token's SHA-256
-- is kept; a use is taken by one conditional update, so racing
-- enrollments cannot share a single use.
CREATE TABLE agent_enrollment_tokens (
    id          UUID PRIMARY KEY,
    -- Hex SHA-256 of the whole token text.
    secret_hash TEXT NOT NULL UNIQUE,
    host        TEXT NOT NULL,
    uses        INTEGER NOT NULL CHECK (uses > 0),
    used        INTEGER NOT NULL DEFAULT 0 CHECK (used >= 0 AND used <= uses),
    created_at  TIMESTAMPTZ NOT NULL,
    created_by  TEXT NOT NULL,
    expires_at  TIMESTAMPTZ NOT NULL,
    revoked_at  TIMESTAMPTZ,
    revoked_by  TEXT
);
CREATE INDEX agent_enrollment_tokens_created ON agent_enrollment_tokens (created_at);

-- The token an identity was enrolled with, when it was.
ALTER TABLE agent_identities
    ADD COLUMN enrollment_token UUID REFERENCES agent_enrollment_tokens (id);
CREATE INDEX agent_identities_enrollment_token ON agent_identities (enrollment_token)
    WHERE enrollment_token IS NOT NULL;
