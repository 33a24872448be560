-- +goose Up
-- One day's rows of campaign_spend, which delivery reloads at start and at
-- each UTC midnight instead of summing the day's chains (PostgreSQL's
-- 00042: read its comments).
CREATE INDEX campaign_spend_day ON campaign_spend (day);

-- +goose Down
DROP INDEX campaign_spend_day;
