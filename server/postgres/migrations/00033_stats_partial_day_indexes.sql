-- +goose Up
-- The stats read a window's first partial day from the chains themselves
-- (docs/stats.md): these two indexes make those reads a range over that
-- day rather than a scan of every chain. fraud_rejected reads an
-- advertiser's rejected chains by resolved_at; avg_cpi_by_category the
-- network's cleared chains by resolved_at. Partial: only the chains in
-- those final states have entries (a clearing adds one entry to the
-- sweep's update, which is not HOT anyway).
CREATE INDEX chains_rejected_resolved ON chains (advertiser_app_id, resolved_at) WHERE state = 'rejected';
CREATE INDEX chains_cleared_resolved ON chains (resolved_at) WHERE state = 'cleared';

-- +goose Down
DROP INDEX chains_cleared_resolved;
DROP INDEX chains_rejected_resolved;
