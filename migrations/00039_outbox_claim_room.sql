-- +goose Up
-- Room in each outbox page for every row's claim to be a HOT update
-- (issue 15, target 4).
--
-- A claim (queued -> sending) changes no indexed column, so it can be a
-- heap-only update, which writes no index entry, but only when the new
-- version fits on the row's own page. At fillfactor 60 a page is filled
-- to 60 % by inserts, and one new version of each of its rows needs
-- another 60 % (a claimed version is a few bytes larger: lease_until is
-- set). Only about two claims in three fitted. In `mio bench dispatch`
-- (pg_stat_user_tables, 71,201 sends, 142,402 updates), 49,607 updates
-- were HOT: 69 % of the claims, since the finish (sending -> handed_off)
-- is never HOT (the row leaves the partial indexes on `active`). Every
-- other claim wrote a new entry in each of the four indexes the row was
-- in (primary key, idempotency key, lane, due).
--
-- At 45 a page's rows and one new version of each fit. Measured at 50
-- and 40 on the same bench: 99.4 % and 99.99 % of the claims HOT; the
-- claim's update took 1,522 and 1,706 ms against 2,208 at 60 (about
-- 30 % less), and the table grew 46 -> 46 and 49 MB (the finish's new
-- versions go to other pages whatever the fill). 45 is between the two,
-- with room for rows a little larger than the bench's.
--
-- A storage parameter: pages written from now on are filled to 45 %;
-- pages already full keep their rows until retention deletes them and
-- vacuum frees the space. Nothing is rewritten, and the lock taken
-- (SHARE UPDATE EXCLUSIVE) does not block reads or writes of rows.
-- TestClaimsAreHeapOnlyUpdates (db) proves the claims HOT.
SET lock_timeout = '10s';
ALTER TABLE mio.outbox SET (fillfactor = 45);

-- +goose Down
SET lock_timeout = '10s';
ALTER TABLE mio.outbox SET (fillfactor = 60);
