-- +goose Up
-- Microsoft Teams and Google Chat accounts: channel_type 'teams' and
-- 'google_chat'. The CHECK constraint on
-- mio.accounts.channel_type is replaced with the full list of the channel
-- registry's slugs (channels/builtin TestChannelListsDatabase holds the two
-- together). The new constraint is added NOT VALID and validated after, so
-- the table is not scanned under the ACCESS EXCLUSIVE lock.
SET lock_timeout = '10s';
ALTER TABLE mio.accounts DROP CONSTRAINT accounts_channel_type_check;
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_check
    CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook', 'teams', 'google_chat')) NOT VALID;
ALTER TABLE mio.accounts VALIDATE CONSTRAINT accounts_channel_type_check;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.accounts DROP CONSTRAINT accounts_channel_type_check;
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_check
    CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook')) NOT VALID;
ALTER TABLE mio.accounts VALIDATE CONSTRAINT accounts_channel_type_check;
