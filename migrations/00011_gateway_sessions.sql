-- Discord Gateway sessions and source cursors (issue 12).
--
-- mio.gateway_sessions: one row per account that holds a platform
-- connection (the Discord Gateway). The row is the lease (holder,
-- lease_until on the database clock) and the session's resume point
-- (session id, resume URL, last committed sequence). The sequence is
-- written in the same transaction as the messages it covers, fenced on
-- the holder, so a resume never skips and a process that lost its lease
-- cannot write.
--
-- mio.source_cursors: per (account, conversation), the newest platform
-- message id stored through a live intake, and when it was last active.
-- The catch-up reconciler reads platform history after it.

-- +goose Up
SET lock_timeout = '10s';

CREATE TABLE mio.gateway_sessions (
    tenant_id     uuid        NOT NULL,
    account_id    uuid        NOT NULL,
    holder        uuid,
    lease_until   timestamptz NOT NULL DEFAULT 'epoch',
    session_id    text        NOT NULL DEFAULT '',
    resume_url    text        NOT NULL DEFAULT '',
    seq           bigint      NOT NULL DEFAULT 0,
    -- The next IDENTIFY may be sent at this time (identify rate limit).
    identify_at   timestamptz NOT NULL DEFAULT 'epoch',
    -- IDENTIFYs since identify_window began (Discord allows 1000 session
    -- starts a day and resets the token of a bot that goes over).
    identifies      integer     NOT NULL DEFAULT 0,
    identify_window timestamptz NOT NULL DEFAULT 'epoch',
    -- Why the connection stopped for good (e.g. the token was refused).
    error         text        NOT NULL DEFAULT '',
    updated_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, account_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id) ON DELETE CASCADE
);

CREATE TABLE mio.source_cursors (
    tenant_id       uuid        NOT NULL,
    account_id      uuid        NOT NULL,
    conversation_id text        NOT NULL,
    -- envelope conversation type (dm, channel, group ...)
    conversation_type text      NOT NULL DEFAULT '',
    last_source_id  text        NOT NULL,
    active_at       timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, account_id, conversation_id),
    FOREIGN KEY (tenant_id, account_id) REFERENCES mio.accounts (tenant_id, id) ON DELETE CASCADE
);

ALTER TABLE mio.gateway_sessions ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.gateway_sessions FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.gateway_sessions
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
ALTER TABLE mio.source_cursors ENABLE ROW LEVEL SECURITY;
ALTER TABLE mio.source_cursors FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON mio.source_cursors
    USING (tenant_id = mio.current_tenant_id()) WITH CHECK (tenant_id = mio.current_tenant_id());
GRANT SELECT, INSERT, UPDATE, DELETE ON mio.gateway_sessions, mio.source_cursors TO mio_runtime;

-- +goose Down
SET lock_timeout = '10s';
DROP TABLE IF EXISTS mio.source_cursors;
DROP TABLE IF EXISTS mio.gateway_sessions;
