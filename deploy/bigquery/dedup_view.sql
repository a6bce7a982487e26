-- raw_mio.messages_dedup: the analyst-facing table, one row per
-- (account_id, source_message_id), the most recent version winning.
CREATE OR REPLACE VIEW `@PROJECT.raw_mio.messages_dedup` AS
SELECT * EXCEPT (rn)
FROM (
  SELECT m.*,
         ROW_NUMBER() OVER (PARTITION BY account_id, source_message_id
                            ORDER BY received_at DESC, _ingest_at DESC) AS rn
  FROM `@PROJECT.raw_mio.messages` AS m
)
WHERE rn = 1;
