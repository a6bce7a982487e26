-- name: RateTake :many
-- Takes tokens from several buckets of one tenant (see mio.rate_take);
-- now NULL uses the database clock.
SELECT input.bucket_key::text AS bucket_key, t.granted::int AS granted, t.wait_seconds::float8 AS wait_seconds
FROM (
    SELECT unnest(@bucket_keys::text[]) AS bucket_key,
           unnest(@rates::float8[]) AS rate,
           unnest(@bursts::float8[]) AS burst,
           unnest(@wants::int[]) AS want
) AS input
CROSS JOIN LATERAL mio.rate_take(@tenant_id::uuid, input.bucket_key, input.rate, input.burst, input.want,
                                 sqlc.narg('now')::timestamptz) AS t;

-- name: RateBucketPrune :execrows
-- Deletes at most max_rows buckets of the tenant untouched since before
-- (long refilled to full: recreated full on next use).
DELETE FROM mio.rate_buckets
WHERE ctid = ANY (ARRAY(
    SELECT b.ctid FROM mio.rate_buckets AS b
    WHERE b.tenant_id = @tenant_id::uuid AND b.updated_at < @before::timestamptz
    LIMIT @max_rows::int
));
