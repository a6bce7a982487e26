-- raw_mio.messages_external: ad-hoc and ops queries straight over the NDJSON
-- lake. Duplicates are present by design (at-least-once archive).
-- Columns are messages_schema.json minus channel_type, which comes from the
-- Hive partition path together with date.
CREATE SCHEMA IF NOT EXISTS `@PROJECT.raw_mio`;

CREATE OR REPLACE EXTERNAL TABLE `@PROJECT.raw_mio.messages_external` (
  id STRING NOT NULL,
  tenant_id STRING NOT NULL,
  account_id STRING NOT NULL,
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
  trace_id STRING
)
WITH PARTITION COLUMNS (
  channel_type STRING,
  date DATE
)
OPTIONS (
  format = 'NEWLINE_DELIMITED_JSON',
  uris = ['gs://@BUCKET/@PREFIX/mio/*'],
  hive_partition_uri_prefix = 'gs://@BUCKET/@PREFIX/mio',
  require_hive_partition_filter = false,
  ignore_unknown_values = true
);
