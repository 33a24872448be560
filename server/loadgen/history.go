package loadgen

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/outbox"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/webhooks"
)

// A year of a busy network, written into a store by its bulk path: each
// chain once, in its final state (by COPY on PostgreSQL, which fires the
// same row triggers as INSERT), fill counters, and the ledger through
// ledger.Apply (top-ups, escrow holds, clearings, releases) in time order,
// so every trigger (the daily rollups, campaign spend) and every ledger
// invariant holds (`ledger verify` and the rollup-vs-raw comparison of the
// history test pass after it). A chain written in its final state adds to
// the rollups what its insert and later update would: each trigger adds
// the parts of the row it finds.
//
// The events of the last 30 days (webhooks.Retention: older ones are
// purged) are written with the facts they announce, through the outbox
// (attribution.Events: what the claim and the sweep write), marked
// dispatched as the worker marks them, and each event of a reader with a
// webhook endpoint gets its attempts (one in 20 first answered 503, then
// delivered 5 s later), through the worker's own RecordResults.
// BENCHMARKS.md, "A year of history", states the full sizes and what a
// read costs on it.

// Full-size history: what a busy year is taken to be.
const (
	HistoryApps         = 2_000
	HistoryDays         = 365
	HistoryChains       = 10_000_000  // every chain of the year, in every final state
	HistoryFills        = 200_000_000 // fills counted
	historyBatch        = 2_000       // chains (or settlements) per transaction
	historyFillRowsADay = 4_000       // fill counter rows a day: (campaign, publisher) pairs served
)

// historyASNs are the networks the history's installs come from: large
// residential ones (Comcast, Deutsche Telekom, BT, Orange, Verizon).
var historyASNs = []int64{7922, 3320, 2856, 3215, 701}

// HistoryConfig scales the full-size history: Scale 1 is the year above,
// 0.001 a thousandth of its chains and fills over the same days (apps at
// least 4). Readers are apps of the server (registered, with campaigns)
// that take part as advertisers and publishers like the others, so their
// reads see a share of the history; End is the last day's end (the
// server's now).
type HistoryConfig struct {
	Scale   float64
	Days    int // 0: HistoryDays
	End     time.Time
	Readers []HistoryApp
	Seed    uint64
}

// HistoryApp is an app of the history: its id and, for an advertiser, a
// campaign (its category and price). EndpointID, for a reader, is its
// webhook endpoint (subscribed to every chain event): the history records
// the delivery of each of the app's events to it.
type HistoryApp struct {
	ID, CampaignID, Category string
	PriceCents               int64
	EndpointID               string
}

// HistorySizes are the rows the history wrote.
type HistorySizes struct {
	Apps, Chains, Installs, Cleared, Refunded, Rejected int64
	Fills, FillRows, LedgerOps                          int64
	Events, Attempts                                    int64 // each app's events (of the last 30 days) and their webhook attempts
	Took                                                time.Duration
}

// History writes the history into s.
func History(ctx context.Context, s storage.Store, cfg HistoryConfig) (HistorySizes, error) {
	start := time.Now()
	days := cfg.Days
	if days <= 0 {
		days = HistoryDays
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x4157))
	nApps := max(4, int(float64(HistoryApps)*cfg.Scale))
	apps := append([]HistoryApp(nil), cfg.Readers...)
	categories := []string{"productivity", "utilities", "games", "finance"}
	for i := len(apps); i < nApps; i++ {
		apps = append(apps, HistoryApp{ID: fmt.Sprintf("app_hist%05d", i), CampaignID: fmt.Sprintf("cmp_hist%05d", i),
			Category: categories[i%len(categories)], PriceCents: int64(300 + rng.IntN(400))})
	}
	chainsADay := max(1, int(float64(HistoryChains)*cfg.Scale)/days)
	fillsADay := max(1, int64(float64(HistoryFills)*cfg.Scale)/int64(days))
	fillRows := max(1, min(historyFillRowsADay, int(float64(historyFillRowsADay)*cfg.Scale*10)))
	sz := HistorySizes{Apps: int64(len(apps))}
	first := cfg.End.UTC().Truncate(24*time.Hour).AddDate(0, 0, -days+1)
	eventsFrom := cfg.End.Add(-webhooks.Retention)
	endpoints := map[string]string{}
	for _, a := range apps {
		if a.EndpointID != "" {
			endpoints[a.ID] = a.EndpointID
		}
	}
	// announce is the events of a chain's change to c at at, when the
	// server still keeps them at End.
	announce := func(evs []outbox.Event, c attribution.Chain, prev attribution.State, at time.Time) []outbox.Event {
		if at.Before(eventsFrom) {
			return evs
		}
		return append(evs, attribution.Events(c, prev, at)...)
	}
	apply := func(ctx context.Context, tx storage.Tx, at time.Time, ops []ledger.Operation) error {
		_, errs, err := ledger.Apply(ctx, tx, at, ops)
		if err != nil {
			return err
		}
		for i, e := range errs {
			if e != nil {
				return fmt.Errorf("history: ledger operation %s: %w", ops[i].Key, e)
			}
		}
		return nil
	}
	// Each advertiser is funded for its year of installs.
	err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
		var ops []ledger.Operation
		for _, a := range apps {
			op, err := ledger.TopUp("history:topup:"+a.ID, a.ID, int64(chainsADay*days)*a.PriceCents/int64(len(apps))*4+100_000, "history")
			if err != nil {
				return err
			}
			ops = append(ops, op)
		}
		return apply(ctx, tx, first.Add(-time.Hour), ops)
	})
	if err != nil {
		return sz, err
	}
	sz.LedgerOps += int64(len(apps))
	// Settlements wait in a queue, by time, and are written once the
	// generator's day has passed them, as the sweep would: the ledger is
	// written in time order (a line is never dated before its account's
	// last one: ledger.Account.LastAt), so a settlement written with its
	// install, days ahead, would drag every later line of its accounts to
	// its date.
	var due settleQueue
	settle := func(before time.Time) error {
		for len(due) > 0 && due[0].at.Before(before) {
			var batch []settlement
			for len(due) > 0 && len(batch) < historyBatch && due[0].at.Before(before) {
				batch = append(batch, heap.Pop(&due).(settlement))
			}
			var evs []outbox.Event
			for _, st := range batch {
				evs = append(evs, st.events...)
			}
			var es, as int64
			err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				ops := make([]ledger.Operation, len(batch))
				for i, st := range batch {
					ops[i] = st.op
				}
				at := batch[len(batch)-1].at
				if err := apply(ctx, tx, at, ops); err != nil {
					return err
				}
				var err error
				es, as, err = writeEvents(ctx, tx, evs, at, endpoints)
				return err
			})
			if err != nil {
				return err
			}
			sz.LedgerOps += int64(len(batch))
			sz.Events, sz.Attempts = sz.Events+es, sz.Attempts+as
		}
		return nil
	}
	seq := 0
	for d := range days {
		day := first.AddDate(0, 0, d)
		if err := settle(day); err != nil {
			return sz, err
		}
		// The day's chains, in batches: clicked, then (a share) installed
		// with the hold, then settled 48 to 72 hours later as the sweep does
		// (queued, written when the days reach it, if before End).
		for done := 0; done < chainsADay; {
			n := min(historyBatch, chainsADay-done)
			done += n
			// The batch is drawn before its transaction, which only writes
			// it: a store may run the transaction again (PostgreSQL does
			// when it first creates accounts), and a rerun that drew again
			// would name other apps, whose accounts are missing in turn (at
			// 2,000 apps no batch got through ten attempts). Counted once
			// the transaction committed.
			var (
				b      HistorySizes
				chains = make([]attribution.Chain, 0, n)
				holds  []ledger.Operation
				holdAt time.Time
				queued []settlement
				evs    []outbox.Event
			)
			err := func() error {
				for range n {
					seq++
					adv := apps[rng.IntN(len(apps))]
					pub := apps[rng.IntN(len(apps))]
					if pub.ID == adv.ID {
						pub = apps[(rng.IntN(len(apps)-1)+1+indexOf(apps, adv.ID))%len(apps)]
					}
					at := day.Add(time.Duration(rng.Int64N(int64(24 * time.Hour)))).Truncate(time.Microsecond)
					// Every fact at or before End (the server's now), the
					// install too (at most 630 s after the click): the stats
					// read the rollups of End's day whole.
					if latest := cfg.End.Add(-11 * time.Minute); at.After(latest) {
						at = latest.Add(-time.Duration(rng.IntN(3600)) * time.Second).Truncate(time.Microsecond)
					}
					// Each device at an address of its own, as the server saw its
					// click and its install: a year of installs all at "" made
					// the planner take `install_ip = $4` (the fraud rules'
					// count by address) for a fifth of the table, and the
					// claims' generic plan a parallel scan with JIT (BENCHMARKS.md,
					// "A year at full scale").
					ip := fmt.Sprintf("%d.%d.%d.%d", 11+rng.IntN(212), rng.IntN(256), rng.IntN(256), 1+rng.IntN(254))
					c := attribution.Chain{ID: fmt.Sprintf("chn_hist%09d", seq), Nonce: fmt.Sprintf("jti_hist%09d", seq), State: attribution.StateClicked,
						CampaignID: adv.CampaignID, PublisherAppID: pub.ID, AdvertiserAppID: adv.ID, Category: adv.Category, Platform: xpromo.PlatformMac,
						PriceCents: adv.PriceCents, OfferedAt: at.Add(-time.Minute), ClickedAt: at, DeviceID: fmt.Sprintf("dev_hist%09d", seq),
						ClickIP: ip, CreatedAt: at, UpdatedAt: at}
					asn := historyASNs[rng.IntN(len(historyASNs))]
					r := rng.IntN(100)
					installAt := at.Add(time.Duration(30+rng.IntN(600)) * time.Second)
					resolveAt := installAt.Add(48*time.Hour + time.Duration(rng.IntN(20*3600))*time.Second)
					switch {
					case r < 45: // clicked, never installed
					case r < 50: // a claim rejected by a fraud rule
						c.State, c.Reason, c.ResolvedAt = attribution.StateRejected, []string{"fraud_device_reused", "fraud_install_velocity", "fraud_datacenter_asn"}[rng.IntN(3)], installAt
						c.UpdatedAt, c.InstallIP, c.InstallASN = installAt, ip, asn
						evs = announce(evs, c, attribution.StateClicked, installAt)
						b.Rejected++
					default: // installed, then cleared (7 in 10) or refunded
						c.State, c.InstalledAt, c.InstallIP, c.InstallASN = attribution.StateInstalled, installAt, ip, asn
						inst := c
						inst.UpdatedAt = installAt
						evs = announce(evs, inst, attribution.StateClicked, installAt)
						h := ledger.Hold{ID: c.HoldID(), Advertiser: adv.ID, Publisher: pub.ID, Amount: c.PriceCents, ChainID: c.ID}
						op, err := ledger.EscrowHold("hold:"+c.ID, h)
						if err != nil {
							return err
						}
						holds = append(holds, op)
						holdAt = maxTime(holdAt, installAt)
						b.Installs++
						if resolveAt.After(cfg.End) {
							break // still inside its window at the end
						}
						st := c
						st.ResolvedAt, st.UpdatedAt = resolveAt, resolveAt
						var later []outbox.Event // written with the settlement
						if r < 85 {
							// Activated by the heartbeat a minute past 48 h, then
							// cleared by the sweep.
							act := inst
							act.State, act.ActivatedAt = attribution.StateActivated, installAt.Add(48*time.Hour+time.Minute)
							act.UpdatedAt = act.ActivatedAt
							later = announce(later, act, attribution.StateInstalled, act.ActivatedAt)
							st.State, st.ActivatedAt = attribution.StateCleared, act.ActivatedAt
							later = announce(later, st, attribution.StateActivated, resolveAt)
							op, err = ledger.Clear("clear:"+c.ID, h, ledger.EarnCash)
							b.Cleared++
						} else {
							st.State, st.Reason = attribution.StateRefunded, attribution.ReasonNotActivated
							later = announce(later, st, attribution.StateInstalled, resolveAt)
							op, err = ledger.EscrowRelease("release:"+c.ID, h)
							b.Refunded++
						}
						if err != nil {
							return err
						}
						queued = append(queued, settlement{at: resolveAt, op: op, events: later})
						c = st
					}
					chains = append(chains, c)
					b.Chains++
				}
				b.LedgerOps = int64(len(holds))
				return nil
			}()
			if err != nil {
				return sz, err
			}
			var es, as int64
			err = s.Update(ctx, func(ctx context.Context, tx storage.Tx) error {
				if err := insertChains(ctx, tx, chains); err != nil {
					return err
				}
				// A batch's holds (and the dispatch of its events) are
				// stamped with its latest install time.
				if len(holds) > 0 {
					if err := apply(ctx, tx, holdAt, holds); err != nil {
						return err
					}
				}
				var err error
				es, as, err = writeEvents(ctx, tx, evs, maxTime(holdAt, day), endpoints)
				return err
			})
			if err != nil {
				return sz, err
			}
			for _, q := range queued {
				heap.Push(&due, q)
			}
			sz.Chains, sz.Installs, sz.Cleared, sz.Refunded, sz.Rejected = sz.Chains+b.Chains, sz.Installs+b.Installs, sz.Cleared+b.Cleared, sz.Refunded+b.Refunded, sz.Rejected+b.Rejected
			sz.LedgerOps += b.LedgerOps
			sz.Events, sz.Attempts = sz.Events+es, sz.Attempts+as
		}
		// The day's fill counters, as the servers flush them.
		counts := make([]attribution.FillCount, 0, fillRows)
		seen := map[[2]int]bool{}
		per := max(1, fillsADay/int64(fillRows))
		for range fillRows {
			a, p := rng.IntN(len(apps)), rng.IntN(len(apps))
			if a == p || seen[[2]int{a, p}] {
				continue
			}
			seen[[2]int{a, p}] = true
			counts = append(counts, attribution.FillCount{Day: day, CampaignID: apps[a].CampaignID, AdvertiserAppID: apps[a].ID, PublisherAppID: apps[p].ID, Count: per})
			sz.Fills += per
		}
		sz.FillRows += int64(len(counts))
		if err := s.Update(ctx, func(ctx context.Context, tx storage.Tx) error { return tx.AddFillCounts(ctx, counts) }); err != nil {
			return sz, err
		}
	}
	if err := settle(cfg.End); err != nil {
		return sz, err
	}
	// A bulk load ends vacuumed and with the planner's statistics taken
	// (PostgreSQL: postgres.DB.VacuumAnalyze), as autovacuum leaves it on a
	// server running it.
	if a, ok := s.(vacuumer); ok {
		if err := a.VacuumAnalyze(ctx); err != nil {
			return sz, err
		}
	}
	sz.Took = time.Since(start)
	return sz, nil
}

// vacuumer is a store that vacuums and takes its planner's statistics on
// demand.
type vacuumer interface {
	VacuumAnalyze(ctx context.Context) error
}

// settlement is a clearing or a release the generator writes at its time,
// with the events written with it (the chain's activation and settlement).
type settlement struct {
	at     time.Time
	op     ledger.Operation
	events []outbox.Event
}

// writeEvents writes events to the outbox, marks them dispatched at at, as
// the webhook worker does (webhooks.Tx.ClaimUndispatched: every earlier
// row is dispatched, so the claim takes these), and records the attempts
// of each to its app's endpoint (webhooks.Tx.RecordResults): delivered at
// once, but about one in 20 (every 20th event of the batch) first answered
// 503 and delivered on the first retry.
// It returns how many events (one per app) and attempts it wrote.
func writeEvents(ctx context.Context, tx storage.Tx, evs []outbox.Event, at time.Time, endpoints map[string]string) (events, attempts int64, err error) {
	if len(evs) == 0 {
		return 0, 0, nil
	}
	for _, e := range evs {
		at = maxTime(at, e.CreatedAt) // dispatched once written
	}
	if err := tx.InsertOutbox(ctx, evs); err != nil {
		return 0, 0, err
	}
	claimed, err := tx.ClaimUndispatched(ctx, at, len(evs))
	if err != nil {
		return 0, 0, err
	}
	var results []webhooks.Result
	for i, e := range claimed {
		ep, ok := endpoints[e.AppID]
		if !ok {
			continue
		}
		d := webhooks.Delivery{EndpointID: ep, EventID: e.ID, AppID: e.AppID, EventCreatedAt: e.CreatedAt, NextAttemptAt: e.CreatedAt}
		first := webhooks.Attempt{ID: ids.New("wha"), EndpointID: ep, EventID: e.ID, AppID: e.AppID, Attempt: 1,
			AttemptedAt: e.CreatedAt.Add(time.Second), StatusCode: 200, LatencyMS: int64(40 + i%160), Succeeded: true}
		if i%20 == 7 {
			retry := first
			first.StatusCode, first.Succeeded, first.Excerpt = 503, false, "upstream unavailable"
			first.NextAttemptAt = first.AttemptedAt.Add(webhooks.Schedule[0])
			retry.ID, retry.Attempt, retry.AttemptedAt = ids.New("wha"), 2, first.NextAttemptAt
			results = append(results, webhooks.Result{Delivery: d, Attempt: &first, NextAttemptAt: first.NextAttemptAt},
				webhooks.Result{Delivery: d, Attempt: &retry, Done: true})
			continue
		}
		results = append(results, webhooks.Result{Delivery: d, Attempt: &first, Done: true})
	}
	if err := tx.RecordResults(ctx, at, results); err != nil {
		return 0, 0, err
	}
	return int64(len(claimed)), int64(len(results)), nil
}

// chainCopier is a store transaction that writes new chains in bulk
// (PostgreSQL's COPY, postgres.tx.CopyChains), firing the triggers an
// insert fires.
type chainCopier interface {
	CopyChains(ctx context.Context, cs []attribution.Chain) error
}

// insertChains writes new chains, by COPY where the store has it.
func insertChains(ctx context.Context, tx storage.Tx, cs []attribution.Chain) error {
	if c, ok := tx.(chainCopier); ok {
		return c.CopyChains(ctx, cs)
	}
	for _, c := range cs {
		if ok, err := tx.InsertChain(ctx, c); err != nil || !ok {
			return fmt.Errorf("history: inserting chain %s: %v", c.ID, err)
		}
	}
	return nil
}

// settleQueue is a min-heap of settlements by time.
type settleQueue []settlement

func (q settleQueue) Len() int           { return len(q) }
func (q settleQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q settleQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *settleQueue) Push(x any)        { *q = append(*q, x.(settlement)) }
func (q *settleQueue) Pop() any {
	old := *q
	s := old[len(old)-1]
	*q = old[:len(old)-1]
	return s
}

func indexOf(apps []HistoryApp, id string) int {
	for i, a := range apps {
		if a.ID == id {
			return i
		}
	}
	return 0
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
