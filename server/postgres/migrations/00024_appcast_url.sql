-- +goose Up
-- The optional appcast_url of a registration (docs/apps.md): the app's
-- Sparkle-format appcast, the cadence source of a Windows app and of a Mac
-- app whose bundle declares no SUFeedURL (docs/reputation.md). '' when none
-- was given, as category.
ALTER TABLE apps ADD COLUMN appcast_url text NOT NULL DEFAULT '';

-- +goose Down
ALTER TABLE apps DROP COLUMN appcast_url;
