-- A channel's delivery log (`GET /api/v1/channels/{id}/deliveries`) reads
-- its deliveries newest first, and deleting a channel cascades to them:
-- both find a channel's deliveries by this index instead of a scan of the
-- whole outbox.
create index alert_deliveries_channel on alert_deliveries (channel_id, created_at desc, id desc);
