-- +goose Up
SET lock_timeout = '10s';
-- The channel types: one row per channel slug, the foreign key of
-- mio.accounts.channel_type. The channel registry (channels/builtin) is
-- their source: `mio migrate up` upserts every registered channel's slug
-- and display name with registered = true and marks the other rows
-- registered = false (kept: accounts may still name them), so adding a
-- channel needs no migration. `mio serve` and /readyz report the schema
-- out of date while a registered channel has no row (Migrator.Check).
-- SQL operators list the channels here.
--
-- The rows below are the registry's channels when this table was made, so
-- that a database migrated without the registry (db/dbtest's template)
-- accepts their accounts; a slug an existing account holds outside them
-- is kept, unregistered, so the foreign key validates.
CREATE TABLE mio.channel_types (
    slug text PRIMARY KEY CONSTRAINT channel_types_slug_check CHECK (slug ~ '^[a-z][a-z0-9_]{0,31}$'),
    display_name text NOT NULL,
    -- false: no channel of the running registry has this slug.
    registered boolean NOT NULL DEFAULT true,
    updated_at timestamptz NOT NULL DEFAULT now()
);
COMMENT ON TABLE mio.channel_types IS 'Channel slugs; written by mio migrate up from the channel registry';
-- Written by migrations only; the service reads.
REVOKE INSERT, UPDATE, DELETE ON mio.channel_types FROM mio_runtime;
GRANT SELECT ON mio.channel_types TO mio_runtime;

INSERT INTO mio.channel_types (slug, display_name) VALUES
    ('discord', 'Discord'),
    ('google_chat', 'Google Chat'),
    ('slack', 'Slack'),
    ('teams', 'Microsoft Teams'),
    ('telegram', 'Telegram'),
    ('webhook', 'Standard Webhooks'),
    ('whatsapp', 'WhatsApp Cloud API'),
    ('zoho_cliq', 'Zoho Cliq');
INSERT INTO mio.channel_types (slug, display_name, registered)
SELECT DISTINCT channel_type, channel_type, false FROM mio.accounts
ON CONFLICT (slug) DO NOTHING;

ALTER TABLE mio.accounts DROP CONSTRAINT accounts_channel_type_check;
-- NOT VALID, then validated: the table is not scanned under the ACCESS
-- EXCLUSIVE lock.
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_fkey
    FOREIGN KEY (channel_type) REFERENCES mio.channel_types (slug) NOT VALID;
ALTER TABLE mio.accounts VALIDATE CONSTRAINT accounts_channel_type_fkey;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.accounts DROP CONSTRAINT accounts_channel_type_fkey;
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_check
    CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook', 'teams', 'google_chat')) NOT VALID;
ALTER TABLE mio.accounts VALIDATE CONSTRAINT accounts_channel_type_check;
DROP TABLE mio.channel_types;
