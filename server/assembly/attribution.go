package assembly

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	token "github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/httpapi"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/storage"
)

// auction adapts market.Service to attribution.Auction.
type auction struct{ m *market.Service }

func (a auction) Fill(ctx context.Context, publisherAppID, category string, platform xpromo.Platform) (attribution.Award, bool, error) {
	aw, ok, err := a.m.Fill(ctx, market.FillRequest{PublisherAppID: publisherAppID, Category: category, Platform: platform})
	return attribution.Award(aw), ok, err
}

func (a auction) CheckBudget(daily, spent, price int64) error {
	return market.CheckBudget(daily, spent, price)
}

func (a auction) Spent(campaignID, advertiserAppID string, delta int64, at time.Time) {
	a.m.Spent(campaignID, advertiserAppID, delta, at)
}

// tradeTx is the store's transaction as the trading rules take it: every
// store transaction (storage.Tx) is one.
func tradeTx(tx attribution.Tx) (market.TradeTx, error) {
	t, ok := tx.(market.TradeTx)
	if !ok {
		return nil, fmt.Errorf("assembly: transaction %T is not a market.TradeTx", tx)
	}
	return t, nil
}

func (a auction) RecordTrade(ctx context.Context, tx attribution.Tx, appA, appB string) (bool, error) {
	t, err := tradeTx(tx)
	if err != nil {
		return false, err
	}
	return a.m.RecordTrade(ctx, t, appA, appB)
}

func (a auction) RecordClearing(ctx context.Context, tx attribution.Tx, advertiserAppID string) (bool, error) {
	t, err := tradeTx(tx)
	if err != nil {
		return false, err
	}
	return a.m.RecordClearing(ctx, t, advertiserAppID)
}

func (a auction) Invalidate() { a.m.Invalidate() }

// MinOfferSecret is the shortest offer MAC secret accepted (bytes).
const MinOfferSecret = token.MinMACSecretSize

// macKey names a MAC secret by a hash of it, so that an offer's mac_kid says
// which configured secret sealed it without revealing anything about it.
func macKey(secret []byte) token.MACKey {
	sum := sha256.Sum256(append([]byte("xpromo offer mac key id\x00"), secret...))
	return token.MACKey{ID: "m_" + base64.RawURLEncoding.EncodeToString(sum[:9]), Secret: secret}
}

// offerKeys returns the key that seals offers and every key that verifies
// them. Without a configured secret a test-mode server uses the one kept in
// its store, drawn by the first process that started on it (so offers
// sealed before a restart still verify after it, and instances on one store
// share it); a live server refuses to start, since its instances must share
// a secret its operator keeps.
func offerKeys(ctx context.Context, cfg Config, store storage.Store) (token.MACKey, token.MACKeys, error) {
	secret := []byte(cfg.OfferSecret)
	if len(secret) == 0 {
		if cfg.Mode == httpapi.ModeLive {
			return token.MACKey{}, nil, errors.New("live mode needs an offer MAC secret (at least 32 bytes) shared by every instance")
		}
		drawn := make([]byte, 32)
		if _, err := rand.Read(drawn); err != nil {
			return token.MACKey{}, nil, err
		}
		err := store.Update(ctx, func(ctx context.Context, tx storage.Tx) (err error) {
			secret, err = tx.TestOfferSecret(ctx, drawn)
			return err
		})
		if err != nil {
			return token.MACKey{}, nil, fmt.Errorf("the test offer secret: %w", err)
		}
	}
	if len(secret) < MinOfferSecret {
		return token.MACKey{}, nil, fmt.Errorf("the offer MAC secret is %d bytes; at least %d are needed", len(secret), MinOfferSecret)
	}
	current := macKey(secret)
	keys := token.MACKeys{current.ID: current.Secret}
	for _, p := range cfg.PreviousOfferSecrets {
		if len(p) < MinOfferSecret {
			return token.MACKey{}, nil, fmt.Errorf("a previous offer MAC secret is %d bytes; at least %d are needed", len(p), MinOfferSecret)
		}
		k := macKey([]byte(p))
		keys[k.ID] = k.Secret
	}
	return current, keys, nil
}

// ipClassifier loads the IP-to-ASN table and the datacenter list. Without
// a table only the listed prefixes apply, which the log says at start.
func ipClassifier(cfg Config) (*attribution.Classifier, error) {
	c := &attribution.Classifier{Datacenters: attribution.DefaultDatacenters()}
	if cfg.DatacentersFile != "" {
		f, err := os.Open(cfg.DatacentersFile)
		if err != nil {
			return nil, fmt.Errorf("datacenter list: %w", err)
		}
		defer f.Close()
		if c.Datacenters, err = attribution.ParseDatacenters(f); err != nil {
			return nil, err
		}
	}
	if cfg.IPToASNFile == "" {
		cfg.Logger.Warn("no IP-to-ASN table configured: fraud_datacenter_asn only sees the datacenter list's prefixes (set the iptoasn.com TSV file)")
		return c, nil
	}
	f, err := os.Open(cfg.IPToASNFile)
	if err != nil {
		return nil, fmt.Errorf("ip-to-asn table: %w", err)
	}
	defer f.Close()
	if c.Table, err = attribution.LoadIPToASN(f); err != nil {
		return nil, err
	}
	cfg.Logger.Info("IP-to-ASN table loaded", slog.String("file", cfg.IPToASNFile), slog.Int("ranges", c.Table.Ranges()), slog.Int("datacenter_asns", c.Datacenters.ASNs()))
	return c, nil
}

// attributionService builds attribution on the market's auction, and gives
// delivery its spend of the day (SpendToday) from the chains.
func attributionService(ctx context.Context, cfg Config, store storage.Store, m *market.Service) (*attribution.Service, error) {
	key, keys, err := offerKeys(ctx, cfg, store)
	if err != nil {
		return nil, err
	}
	ips, err := ipClassifier(cfg)
	if err != nil {
		return nil, err
	}
	svc := &attribution.Service{
		Update:  attribution.Txer(storage.Updater[attribution.Tx](store)),
		View:    attribution.Txer(storage.Viewer[attribution.Tx](store)),
		Now:     cfg.Now,
		Auction: auction{m},
		MACKey:  key,
		MACKeys: keys,
		IPs:     ips,
		Rules:   cfg.FraudRules,
		Log:     cfg.Logger,

		CanaryRate: cfg.CanaryRate,
	}
	m.SpendToday = svc.SpendToday
	m.ChainStats, m.NetworkChainStats = svc.StatsFigures, svc.NetworkFigures
	return svc, nil
}

// DefaultSweepInterval is how often RunBackground sweeps due chains and
// stores the fill counters.
const DefaultSweepInterval = 5 * time.Second

// RunBackground runs the background work until ctx ends: attribution's
// clearing sweep and the fill counters' flush, every cfg.SweepInterval
// (DefaultSweepInterval if 0), with a last flush on the way out; and the
// lifecycle review (suspensions, clawbacks), every cfg.Lifecycle.ReviewEvery
// (lifecycle.DefaultReviewEvery if 0), first right at start. Several
// instances may run it at once (the sweep claims disjoint batches; a chain
// is clawed back once, whoever reviews).
func (s *Server) RunBackground(ctx context.Context) { s.runBackground(ctx, true) }

// RunFillCounts is the background work of an instance that runs none
// other (--background=none): RunBackground without the sweep and the
// review, so only the flush of the fills this process counted, every
// SweepInterval and at shutdown. No other instance can store them: the
// counts are in this one's memory.
func (s *Server) RunFillCounts(ctx context.Context) { s.runBackground(ctx, false) }

// runBackground is the one loop of RunBackground (all) and RunFillCounts.
func (s *Server) runBackground(ctx context.Context, all bool) {
	tick := time.NewTicker(s.sweepInterval())
	defer tick.Stop()
	var review <-chan time.Time // nil, so never, unless all
	if all {
		t := time.NewTicker(s.cfg.Lifecycle.WithDefaults().ReviewEvery)
		defer t.Stop()
		review = t.C
	}
	onTick := func() {
		if all {
			s.sweep(ctx)
		}
		s.flushFills(ctx)
	}
	if all {
		onTick()
		s.review(ctx)
	}
	for {
		select {
		case <-ctx.Done():
			s.flushFillsAtShutdown(ctx)
			return
		case <-review:
			s.review(ctx)
		case <-tick.C:
			onTick()
		}
	}
}

// sweep runs attribution's clearing sweep once and logs what it did.
func (s *Server) sweep(ctx context.Context) {
	res, err := s.Attribution.Sweep(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		s.cfg.Logger.Warn("attribution sweep", slog.String("error", err.Error()))
	case res.Cleared+res.Refunded+res.Failed > 0:
		s.cfg.Logger.Info("attribution sweep", slog.Int("cleared", res.Cleared), slog.Int("refunded", res.Refunded), slog.Int("failed", res.Failed))
	}
}

func (s *Server) sweepInterval() time.Duration {
	if s.cfg.SweepInterval <= 0 {
		return DefaultSweepInterval
	}
	return s.cfg.SweepInterval
}

func (s *Server) flushFills(ctx context.Context) {
	if err := s.Attribution.FlushFills(ctx); err != nil && ctx.Err() == nil {
		s.cfg.Logger.Warn("storing fill counts", slog.String("error", err.Error()))
	}
}

// flushFillsAtShutdown stores what is left once ctx has ended, within 5
// seconds.
func (s *Server) flushFillsAtShutdown(ctx context.Context) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.Attribution.FlushFills(fctx); err != nil {
		s.cfg.Logger.Warn("storing fill counts at shutdown", slog.String("error", err.Error()))
	}
}

// review runs the lifecycle review once and logs what it did.
func (s *Server) review(ctx context.Context) {
	res, err := s.Lifecycle.Review(ctx)
	log := s.cfg.Logger
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("lifecycle review", slog.String("error", err.Error()))
	case len(res.Suspended)+len(res.Reinstated)+res.ClawedBack+res.Failed > 0:
		log.Info("lifecycle review", slog.Int("suspended", len(res.Suspended)), slog.Int("reinstated", len(res.Reinstated)), slog.Int("clawed_back", res.ClawedBack),
			slog.Int64("refunded_cents", res.Refunded), slog.Int("failed", res.Failed))
	}
}
