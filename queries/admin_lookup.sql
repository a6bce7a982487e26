-- name: MessageKnown :one
-- Whether id names an outbound or inbound message or an attachment of
-- the transaction's tenant (a dead letter's possible origins).
SELECT EXISTS (SELECT 1 FROM mio.outbox AS o WHERE o.tenant_id = @tenant_id AND o.id = @id)
    OR EXISTS (SELECT 1 FROM mio.inbox AS i WHERE i.tenant_id = @tenant_id AND i.id = @id)
    OR EXISTS (SELECT 1 FROM mio.attachments AS a WHERE a.tenant_id = @tenant_id AND a.id = @id) AS known;
