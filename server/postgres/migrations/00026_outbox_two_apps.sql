-- +goose Up
-- One outbox row per event rather than per app (docs/webhooks.md): an event
-- that concerns two apps (a chain's, for its publisher and its advertiser)
-- is one row carrying the second app's event id and app in also_id and
-- also_app_id. Each app still has its own event id; the events API, the
-- dispatcher and the deliveries read the second app's event from these
-- columns. A cleared chain writes two rows instead of four.
ALTER TABLE outbox
    ADD COLUMN also_id     text COLLATE "C" NULL,
    ADD COLUMN also_app_id text COLLATE "C" NULL,
    ADD CONSTRAINT outbox_also_both CHECK ((also_id IS NULL) = (also_app_id IS NULL));
-- GET /v1/apps/{app_id}/events/{event_id} and the deliveries' join find
-- an event by the second app's id; the events API pages the second app's
-- events by (created_at, id) as outbox_app does the first's.
CREATE INDEX outbox_also_id ON outbox (also_id) WHERE also_id IS NOT NULL;
CREATE INDEX outbox_also_app ON outbox (also_app_id, created_at, also_id) WHERE also_app_id IS NOT NULL;

-- +goose Down
DROP INDEX outbox_also_app;
DROP INDEX outbox_also_id;
ALTER TABLE outbox DROP CONSTRAINT outbox_also_both, DROP COLUMN also_app_id, DROP COLUMN also_id;
