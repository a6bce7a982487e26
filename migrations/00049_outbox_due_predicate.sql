-- +goose Up
-- The due index's predicate is written active IS TRUE, not active: the
-- same rows, but a predicate that only a query saying active IS TRUE
-- implies (PostgreSQL proves a partial index's predicate by its form).
-- Queries that walk rows by due time (the dispatch sweeper, the extras
-- walk) say active IS TRUE; queries that look at a lane say active, and
-- reach a lane's rows through outbox_lane alone among the indexes of
-- active rows, whatever the statistics estimate for the tenant
-- (docs/architecture.md, "Planner safety"). The predicate still names
-- only active, so a claim (queued to sending) stays a HOT update.
SET lock_timeout = '10s';
DROP INDEX mio.outbox_due;
CREATE INDEX outbox_due ON mio.outbox (tenant_id, next_attempt_at) WHERE active IS TRUE;

-- +goose Down
SET lock_timeout = '10s';
DROP INDEX mio.outbox_due;
CREATE INDEX outbox_due ON mio.outbox (tenant_id, next_attempt_at) WHERE active;
