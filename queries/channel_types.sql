-- name: ChannelTypesUnknown :many
-- The slugs of the list that mio.channel_types does not hold.
SELECT s.slug::text FROM unnest(@slugs::text[]) AS s (slug)
WHERE NOT EXISTS (SELECT 1 FROM mio.channel_types AS c WHERE c.slug = s.slug)
ORDER BY 1;
