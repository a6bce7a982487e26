-- raw_mio.messages: the authoritative warehouse table, loaded by merge.sql.
-- Columns follow messages_schema.json, plus _ingest_at set by the loader.
CREATE TABLE IF NOT EXISTS `@PROJECT.raw_mio.messages` (
  id STRING NOT NULL,
  tenant_id STRING NOT NULL,
  account_id STRING NOT NULL,
  channel_type STRING NOT NULL,
  kind STRING,
  interaction STRUCT<action_id STRING NOT NULL, value STRING, `values` ARRAY<STRING>, message_id STRING>,
  reaction STRUCT<emoji STRING NOT NULL, added BOOL NOT NULL, message_id STRING NOT NULL>,
  source_message_id STRING NOT NULL,
  conversation STRUCT<id STRING NOT NULL, type STRING NOT NULL, title STRING>,
  thread_id STRING,
  reply_to_source_id STRING,
  sender STRUCT<id STRING NOT NULL, display_name STRING, is_bot BOOL NOT NULL>,
  text STRING NOT NULL,
  attachments ARRAY<STRUCT<
    id STRING NOT NULL, kind STRING NOT NULL, name STRING, mime_type STRING, size INT64,
    status STRING NOT NULL, storage_key STRING, content_sha256 STRING, error STRING,
    source STRUCT<url STRING, ref STRING>>>,
  edited BOOL NOT NULL,
  deleted BOOL NOT NULL,
  edit_of STRUCT<id STRING, source_message_id STRING NOT NULL, platform_message_id STRING NOT NULL>,
  sent_at TIMESTAMP NOT NULL,
  received_at TIMESTAMP NOT NULL,
  raw JSON,
  trace_id STRING,
  _ingest_at TIMESTAMP NOT NULL
)
PARTITION BY DATE(received_at)
CLUSTER BY channel_type, account_id, conversation.id
OPTIONS (require_partition_filter = TRUE);

-- Rows the loader could not validate, kept 30 days for inspection.
CREATE TABLE IF NOT EXISTS `@PROJECT.raw_mio.messages_errors` (
  _ingest_at TIMESTAMP NOT NULL,
  source_uri STRING,
  reason STRING NOT NULL,
  row JSON
)
PARTITION BY DATE(_ingest_at)
OPTIONS (partition_expiration_days = 30);
