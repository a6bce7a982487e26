-- +goose Up
-- Message payloads are compressed with lz4 instead of pglz (issue 15).
-- An inbox row holds the normalized envelope and the raw webhook body; a
-- Slack message of 700 characters makes a row of ~2.4 KB, past the 2 KB
-- at which PostgreSQL compresses a row's largest value, so every ingested
-- message paid for a pglz compression of its envelope inside the group
-- commit. In `mio bench ingest` (pg_stat_statements, 13-row statements)
-- InboxInsertBatch took 0.858 ms a call with pglz and 0.741 ms with lz4:
-- ~9 µs a message, an eighth of the statement; reading (pull, archive,
-- replay) decompresses lz4 several times faster too. Agent replies (the
-- outbox's text) and provider receipts are the same kind of value.
-- Only values written from now on use lz4; existing ones stay readable as
-- they are. Partitions created later inherit the parent's setting. A
-- server built without lz4 (every PGDG, Debian and Docker build has it)
-- refuses SET COMPRESSION lz4 with feature_not_supported: it keeps pglz.
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT c.oid::regclass AS rel, v.col
        FROM (VALUES ('inbox', 'envelope'), ('inbox', 'raw'), ('outbox', 'text'), ('outbox', 'rich_content'),
                     ('outbox', 'attachments'), ('outbox_events', 'detail'), ('provider_events', 'raw')) AS v (tbl, col)
        JOIN pg_class AS c ON c.oid = ('mio.' || v.tbl)::regclass
            OR c.oid IN (SELECT inhrelid FROM pg_inherits WHERE inhparent = ('mio.' || v.tbl)::regclass)
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET COMPRESSION lz4', t.rel, t.col);
    END LOOP;
EXCEPTION WHEN feature_not_supported THEN
    RAISE NOTICE 'this PostgreSQL has no lz4: payloads stay compressed with pglz';
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    t record;
BEGIN
    FOR t IN
        SELECT a.attrelid::regclass AS rel, a.attname AS col
        FROM pg_attribute AS a
        JOIN pg_class AS c ON c.oid = a.attrelid
        JOIN pg_namespace AS n ON n.oid = c.relnamespace
        WHERE n.nspname = 'mio' AND a.attcompression = 'l'
    LOOP
        EXECUTE format('ALTER TABLE %s ALTER COLUMN %I SET COMPRESSION default', t.rel, t.col);
    END LOOP;
END
$$;
-- +goose StatementEnd
