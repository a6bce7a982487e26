-- The loader's step for one window of partitions (run hourly, e.g. at :05).
-- @window_start / @window_end are DATE query parameters bounding the
-- archive partitions to (re)read; re-running a window is idempotent.

-- 1. Quarantine rows that cannot be loaded.
INSERT INTO `@PROJECT.raw_mio.messages_errors` (_ingest_at, source_uri, reason, row)
SELECT CURRENT_TIMESTAMP(), _FILE_NAME,
       CASE
         WHEN id IS NULL OR account_id IS NULL OR source_message_id IS NULL THEN 'missing key'
         WHEN received_at IS NULL THEN 'missing received_at'
         ELSE 'partition mismatch'
       END,
       TO_JSON(e)
FROM `@PROJECT.raw_mio.messages_external` AS e
WHERE e.date BETWEEN @window_start AND @window_end
  AND (id IS NULL OR account_id IS NULL OR source_message_id IS NULL OR received_at IS NULL
       OR DATE(received_at) != e.date);

-- 2. Merge new messages; a redelivered or re-archived row (same account and
-- source id) keeps the most recent version.
MERGE `@PROJECT.raw_mio.messages` AS t
USING (
  SELECT * EXCEPT (date, rn)
  FROM (
    SELECT e.*, ROW_NUMBER() OVER (PARTITION BY account_id, source_message_id ORDER BY received_at DESC) AS rn
    FROM `@PROJECT.raw_mio.messages_external` AS e
    WHERE e.date BETWEEN @window_start AND @window_end
      AND id IS NOT NULL AND account_id IS NOT NULL AND source_message_id IS NOT NULL
      AND received_at IS NOT NULL AND DATE(received_at) = e.date
  )
  WHERE rn = 1
) AS s
ON t.account_id = s.account_id AND t.source_message_id = s.source_message_id
   AND DATE(t.received_at) BETWEEN DATE_SUB(@window_start, INTERVAL 1 DAY) AND DATE_ADD(@window_end, INTERVAL 1 DAY)
WHEN MATCHED AND s.received_at > t.received_at THEN UPDATE SET
  id = s.id, tenant_id = s.tenant_id, channel_type = s.channel_type, kind = s.kind, interaction = s.interaction,
  reaction = s.reaction, conversation = s.conversation,
  thread_id = s.thread_id, reply_to_source_id = s.reply_to_source_id, sender = s.sender, text = s.text,
  attachments = s.attachments, edited = s.edited, deleted = s.deleted, edit_of = s.edit_of, sent_at = s.sent_at,
  received_at = s.received_at, raw = s.raw, trace_id = s.trace_id, _ingest_at = CURRENT_TIMESTAMP()
WHEN NOT MATCHED THEN INSERT (
  id, tenant_id, account_id, channel_type, kind, interaction, reaction, source_message_id, conversation, thread_id, reply_to_source_id,
  sender, text, attachments, edited, deleted, edit_of, sent_at, received_at, raw, trace_id, _ingest_at
) VALUES (
  s.id, s.tenant_id, s.account_id, s.channel_type, s.kind, s.interaction, s.reaction, s.source_message_id, s.conversation, s.thread_id,
  s.reply_to_source_id, s.sender, s.text, s.attachments, s.edited, s.deleted, s.edit_of, s.sent_at, s.received_at,
  s.raw, s.trace_id, CURRENT_TIMESTAMP()
);
