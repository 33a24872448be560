-- +goose Up
-- Delivery reloads every campaign's spend of the day at start and at each
-- UTC midnight (market.Service.SpendToday). It summed the day's chains,
-- and no index of chains leads with installed_at: on a year of history
-- (BENCHMARKS.md, "A year at full scale") the sum read the whole
-- chains_ip_installed index, 25,480 blocks, 420-740 ms, with claims
-- waiting behind the reload. campaign_spend (00025) already holds the
-- figure, kept by the triggers in the writers' transactions; this index
-- reads one day's rows of it.
CREATE INDEX campaign_spend_day ON campaign_spend (day);

-- +goose Down
DROP INDEX campaign_spend_day;
