-- +goose Up
-- Accounts may be of channel type google_chat. The CHECK constraint on
-- mio.accounts.channel_type is replaced by one listing every channel of
-- the registry (channels/builtin's TestChannelListsDatabase holds the
-- two together). It is added NOT VALID and validated apart, so the scan
-- of existing rows does not hold the table's exclusive lock.
SET lock_timeout = '10s';
ALTER TABLE mio.accounts DROP CONSTRAINT IF EXISTS accounts_channel_type_check;
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_check
    CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook', 'google_chat')) NOT VALID;
ALTER TABLE mio.accounts VALIDATE CONSTRAINT accounts_channel_type_check;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.accounts DROP CONSTRAINT IF EXISTS accounts_channel_type_check;
ALTER TABLE mio.accounts ADD CONSTRAINT accounts_channel_type_check
    CHECK (channel_type IN ('slack', 'telegram', 'discord', 'zoho_cliq', 'whatsapp', 'webhook')) NOT VALID;
