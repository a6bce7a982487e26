-- +goose NO TRANSACTION
-- +goose Up
-- The outbox never reports fewer than 128 pages (1 MiB). PostgreSQL costs
-- a sequential scan by the heap's current blocks, and a plan made while
-- the outbox was analyzed at a page or two (a young outbox) reads that page
-- for every lookup, and is kept until the next ANALYZE. A heap of at least
-- 128 blocks costs a sequential scan at least 128 whatever the statistics,
-- more than any index descent, so the dispatch functions' statements have
-- one cheapest plan on an empty, a young and a large outbox alike
-- (docs/architecture.md, "Planner safety"). vacuum_truncate off: VACUUM
-- never gives trailing empty pages back, so the heap stays at its
-- high-water mark. The extent is made by rows of a placeholder tenant,
-- inserted until the heap has 128 blocks and deleted with the tenant; the
-- VACUUM that follows frees the pages for new rows (an outbox already that
-- large gets no rows, only the VACUUM). No transaction: VACUUM cannot run
-- in one.
--
-- conversation_id's n_distinct is fixed at 5 % of the rows (a conversation
-- holds 20 messages on average): estimated by the sample, a young outbox's
-- conversations hold a row each, and a lane lookup estimated at one row
-- costs less as a bitmap scan and a sort than as outbox_lane's ordered
-- scan; estimated at a few, the ordered scan under LIMIT 1 is cheaper.
SET lock_timeout = '10s';
ALTER TABLE mio.outbox SET (vacuum_truncate = off);
ALTER TABLE mio.outbox ALTER COLUMN conversation_id SET (n_distinct = -0.05);
-- +goose StatementBegin
DO $$
DECLARE
    t uuid := gen_random_uuid();
    a uuid := gen_random_uuid();
BEGIN
    IF pg_relation_size('mio.outbox') >= 128 * 8192 THEN
        RETURN;
    END IF;
    PERFORM set_config('app.current_tenant_id', t::text, true);
    INSERT INTO mio.tenants (id, name) VALUES (t, 'outbox extent ' || t);
    INSERT INTO mio.accounts (tenant_id, id, channel_type, display_name) VALUES (t, a, 'webhook', 'outbox extent');
    WHILE pg_relation_size('mio.outbox') < 128 * 8192 LOOP
        INSERT INTO mio.outbox (tenant_id, id, account_id, channel_type, conversation_id, idempotency_key,
                                request_sha256, handoff_state, text)
        SELECT t, u.id, a, 'webhook', 'extent', u.id::text, '\x00'::bytea, 'handed_off', repeat('x', 1500)
        FROM (SELECT gen_random_uuid() AS id FROM generate_series(1, 64)) AS u;
    END LOOP;
    DELETE FROM mio.outbox WHERE tenant_id = t;
    DELETE FROM mio.accounts WHERE tenant_id = t;
    DELETE FROM mio.tenants WHERE id = t;
END
$$;
-- +goose StatementEnd
VACUUM (ANALYZE) mio.outbox;

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.outbox ALTER COLUMN conversation_id RESET (n_distinct);
ALTER TABLE mio.outbox RESET (vacuum_truncate);
