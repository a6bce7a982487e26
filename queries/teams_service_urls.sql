-- name: TeamsServiceURLGet :one
SELECT service_url FROM mio.teams_service_urls
WHERE tenant_id = @tenant_id AND account_id = @account_id AND conversation_id = @conversation_id;

-- name: TeamsServiceURLPut :exec
-- Remembers the conversation's service URL (a no-op when unchanged).
INSERT INTO mio.teams_service_urls AS t (tenant_id, account_id, conversation_id, service_url)
VALUES (@tenant_id, @account_id, @conversation_id, @service_url)
ON CONFLICT (tenant_id, account_id, conversation_id) DO UPDATE
    SET service_url = excluded.service_url, updated_at = now()
    WHERE t.service_url <> excluded.service_url;
