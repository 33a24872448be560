package webhooks

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/outbound"
)

// Worker defaults (Service fields of the same names override them).
const (
	DefaultTimeout     = 10 * time.Second
	DefaultLease       = time.Minute
	DefaultClaimBatch  = 256
	DefaultConcurrency = 16
	// DispatchBatch is how many events one dispatch transaction fans out.
	DispatchBatch = 1000
	// PurgeBatch is how many rows one purge statement deletes.
	PurgeBatch = 5000
	// UserAgent identifies deliveries.
	UserAgent = "xpromo-webhooks/1"
)

// NewClient returns the client deliveries go through: server/outbound's,
// with o's policy and DefaultTimeout unless o sets one, and no redirects
// followed (a 3xx answer is a failed attempt, as with most webhook senders:
// a receiver that moved registers its new URL).
func NewClient(o outbound.Options) *http.Client {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxResponseBytes <= 0 {
		o.MaxResponseBytes = 64 << 10 // an excerpt is kept; the rest is drained for keep-alive
	}
	o.UserAgent = UserAgent
	c := outbound.New(o)
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return c
}

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return DefaultLease
}

func (s *Service) timeout() time.Duration {
	if s.Timeout > 0 {
		return s.Timeout
	}
	return DefaultTimeout
}

// Dispatch fans up to DispatchBatch undispatched events out into
// deliveries, one per enabled endpoint of the event's app subscribed to its
// type, and marks them dispatched: one transaction. It returns how many
// events it dispatched.
func (s *Service) Dispatch(ctx context.Context) (int, error) {
	now := s.now()
	var n int
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		evs, err := tx.ClaimUndispatched(ctx, now, DispatchBatch)
		if err != nil {
			return err
		}
		n = len(evs)
		if n == 0 {
			return nil
		}
		var appIDs []string
		for _, e := range evs {
			appIDs = append(appIDs, e.AppID)
		}
		slices.Sort(appIDs)
		eps, err := tx.EnabledWebhookEndpoints(ctx, slices.Compact(appIDs))
		if err != nil || len(eps) == 0 {
			return err
		}
		byApp := map[string][]Endpoint{}
		for _, ep := range eps {
			byApp[ep.AppID] = append(byApp[ep.AppID], ep)
		}
		var ds []Delivery
		for _, e := range evs {
			for _, ep := range byApp[e.AppID] {
				if ep.Subscribed(e.Type) {
					ds = append(ds, Delivery{EndpointID: ep.ID, EventID: e.ID, AppID: e.AppID, EventCreatedAt: e.CreatedAt, NextAttemptAt: now})
				}
			}
		}
		return tx.InsertDeliveries(ctx, ds)
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeliverStats counts what one Deliver did.
type DeliverStats struct {
	Claimed   int
	Succeeded int
	Failed    int // attempts that failed (retried later, or the endpoint disabled)
	Released  int // claimed but not attempted: due again without an attempt counted
	Disabled  int // endpoints disabled
}

// Deliver claims up to ClaimBatch due deliveries with a lease, sends them
// and records the results in one transaction.
//
// The deliveries of one endpoint are sent one after another in the order
// their events occurred (created_at, id); different endpoints are sent to
// concurrently (at most Concurrency at once). After a failed attempt, the
// endpoint's other deliveries of the claim are not attempted but released:
// due again after the first retry delay, with no attempt counted. So an
// endpoint that is down gets one request per claim rather than one per
// event, and a slow one cannot hold a claim past its lease. Requests not
// started before the lease's end nears are released the same way.
//
// When ctx ends, the attempts that got an answer are still recorded and
// the rest released; a process that dies records nothing, and its
// deliveries are due again when the lease ends.
func (s *Service) Deliver(ctx context.Context) (DeliverStats, error) {
	batch := s.ClaimBatch
	if batch <= 0 {
		batch = DefaultClaimBatch
	}
	now := s.now()
	leaseEnd := now.Add(s.lease()).Truncate(time.Microsecond) // the stores keep microseconds
	var claimed []Claimed
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		claimed, err = tx.ClaimDeliveries(ctx, now, leaseEnd, batch)
		return err
	})
	if err != nil || len(claimed) == 0 {
		return DeliverStats{}, err
	}
	results := s.send(ctx, claimed)

	st := DeliverStats{Claimed: len(claimed)}
	for _, r := range results {
		switch {
		case r.Attempt == nil:
			st.Released++
		case r.Attempt.Succeeded:
			st.Succeeded++
		default:
			st.Failed++
		}
		if r.Disable != "" {
			st.Disabled++
		}
	}
	// Recorded even when ctx has ended (a shutdown): what was sent stays
	// sent. The claim's token guards against a lease that ran out meanwhile.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	err = s.Update(rctx, func(ctx context.Context, tx Tx) error {
		return tx.RecordResults(ctx, s.now(), results)
	})
	return st, err
}

// send attempts the claimed deliveries and returns one result each, in
// claim order.
func (s *Service) send(ctx context.Context, claimed []Claimed) []Result {
	slices.SortStableFunc(claimed, func(a, b Claimed) int {
		if c := strings.Compare(a.EndpointID, b.EndpointID); c != 0 {
			return c
		}
		if c := a.EventCreatedAt.Compare(b.EventCreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.EventID, b.EventID)
	})
	results := make([]Result, len(claimed))
	conc := s.Concurrency
	if conc <= 0 {
		conc = DefaultConcurrency
	}
	// Requests start no later than this, so that each ends (Timeout) while
	// the claim still holds its deliveries.
	startBy := time.Now().Add(s.lease() - s.timeout() - 5*time.Second)
	sem := make(chan struct{}, conc)
	var wg sync.WaitGroup
	for start := 0; start < len(claimed); {
		end := start + 1
		for end < len(claimed) && claimed[end].EndpointID == claimed[start].EndpointID {
			end++
		}
		wg.Add(1)
		go func(group []Claimed, out []Result) {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			failed := false
			for i, c := range group {
				if failed || ctx.Err() != nil || time.Now().After(startBy) {
					delay := time.Duration(0)
					if failed {
						delay = Schedule[0]
					}
					out[i] = Result{Delivery: c.Delivery, Release: true, NextAttemptAt: s.now().Add(delay)}
					continue
				}
				out[i] = s.attempt(ctx, c)
				failed = out[i].Attempt != nil && !out[i].Attempt.Succeeded
			}
		}(claimed[start:end], results[start:end])
		start = end
	}
	wg.Wait()
	return results
}

// attempt sends one delivery and says what becomes of it.
func (s *Service) attempt(ctx context.Context, c Claimed) Result {
	body, err := json.Marshal(c.Event.Wire())
	if err != nil {
		panic("webhooks: marshalling an event: " + err.Error()) // raw JSON from the store and plain fields
	}
	now, signedAt := s.now(), s.wall()
	var sigs []string
	for _, secret := range c.Endpoint.secrets(now) {
		sig, err := webhook.Sign(secret, c.EventID, signedAt, body)
		if err != nil {
			panic("webhooks: signing with a stored secret: " + err.Error()) // secrets are made by newSecret
		}
		sigs = append(sigs, sig)
	}
	rctx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodPost, c.Endpoint.URL, bytes.NewReader(body))
	a := &Attempt{
		ID: ids.New("wha"), EndpointID: c.EndpointID, EventID: c.EventID, AppID: c.AppID,
		Attempt: c.Attempts + 1, AttemptedAt: now,
	}
	var res *http.Response
	began := time.Now()
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", UserAgent)
		req.Header.Set(webhook.HeaderID, c.EventID)
		req.Header.Set(webhook.HeaderTimestamp, strconv.FormatInt(signedAt.Unix(), 10))
		req.Header.Set(webhook.HeaderSignature, strings.Join(sigs, " "))
		res, err = s.Client.Do(req)
	}
	if err == nil {
		// The answer is the receiver's: ExcerptBytes are kept, at most
		// DrainBytes more read so that the connection can be reused, and a
		// longer answer is cut with the connection (whatever the client's
		// own limit).
		excerpt, _ := io.ReadAll(io.LimitReader(res.Body, ExcerptBytes))
		_, _ = io.CopyN(io.Discard, res.Body, DrainBytes)
		res.Body.Close()
		a.StatusCode, a.Excerpt = res.StatusCode, textExcerpt(excerpt)
		a.Succeeded = res.StatusCode >= 200 && res.StatusCode < 300
	}
	a.LatencyMS = time.Since(began).Milliseconds()
	if err != nil {
		if ctx.Err() != nil {
			// Shutting down: not the receiver's failure. Due again at once.
			return Result{Delivery: c.Delivery, Release: true, NextAttemptAt: s.now()}
		}
		a.Error = errorCode(err)
	}
	r := Result{Delivery: c.Delivery, Attempt: a}
	switch {
	case a.Succeeded:
		r.Done = true
	case a.StatusCode == http.StatusGone:
		r.Done, r.Disable = true, xpromo.WebhookDisabledGone
	case a.Attempt >= MaxAttempts:
		r.Done, r.Disable = true, xpromo.WebhookDisabledFailing
	default:
		r.NextAttemptAt = s.now().Add(Schedule[a.Attempt-1])
		a.NextAttemptAt = r.NextAttemptAt
	}
	return r
}

// textExcerpt keeps the valid UTF-8 text of an answer's first bytes (a cut
// rune at the end is dropped; other invalid bytes become U+FFFD).
func textExcerpt(b []byte) string {
	for i := 0; i < 3 && len(b) > 0 && !utf8.Valid(b); i++ {
		if r, _ := utf8.DecodeLastRune(b); r == utf8.RuneError {
			b = b[:len(b)-1]
		}
	}
	return strings.ToValidUTF8(strings.ReplaceAll(string(b), "\x00", ""), "\uFFFD")
}

// errorCode names why no answer came (WebhookAttempt.error).
func errorCode(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var recordErr tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.Is(err, outbound.ErrForbiddenAddress):
		return "forbidden_address"
	case errors.Is(err, outbound.ErrForbiddenScheme):
		return "forbidden_scheme"
	case errors.Is(err, outbound.ErrResponseTooLarge):
		return "response_too_large"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection_refused"
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection_reset"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &certErr), errors.As(err, &unknownAuth), errors.As(err, &hostErr), errors.As(err, &recordErr):
		return "tls"
	}
	return "connection_failed"
}

// Purge deletes the events and attempts older than Retention, batch after
// batch.
func (s *Service) Purge(ctx context.Context) (events, attempts int, err error) {
	cutoff := s.now().Add(-Retention)
	for _, p := range []struct {
		n   *int
		run func(ctx context.Context, tx Tx) (int, error)
	}{
		{&events, func(ctx context.Context, tx Tx) (int, error) { return tx.PurgeEvents(ctx, cutoff, PurgeBatch) }},
		{&attempts, func(ctx context.Context, tx Tx) (int, error) { return tx.PurgeWebhookAttempts(ctx, cutoff, PurgeBatch) }},
	} {
		for {
			var n int
			err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
				var err error
				n, err = p.run(ctx, tx)
				return err
			})
			*p.n += n
			if err != nil {
				return events, attempts, err
			}
			if n < PurgeBatch {
				break
			}
		}
	}
	return events, attempts, nil
}

// Run is the worker of one server instance, until ctx ends: a dispatcher,
// deliverers claiming deliveries concurrently (each claim is its own batch)
// and an hourly purge. Each loop goes on at once while it finds work and
// waits idle between empty rounds. Failures are logged and retried.
func (s *Service) Run(ctx context.Context, deliverers int, idle time.Duration) {
	if deliverers <= 0 {
		deliverers = 2
	}
	if idle <= 0 {
		idle = 250 * time.Millisecond
	}
	loop := func(name string, wait time.Duration, round func() (bool, error)) {
		for ctx.Err() == nil {
			busy, err := round()
			if err != nil && ctx.Err() == nil {
				s.log().Warn("webhooks: "+name, "error", err.Error())
			}
			if busy && err == nil {
				continue
			}
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		loop("dispatch", idle, func() (bool, error) {
			n, err := s.Dispatch(ctx)
			return n > 0, err
		})
	})
	for range deliverers {
		wg.Go(func() {
			loop("deliver", idle, func() (bool, error) {
				st, err := s.Deliver(ctx)
				if st.Disabled > 0 {
					s.log().Info("webhooks: endpoints disabled", "count", st.Disabled)
				}
				return st.Claimed > 0, err
			})
		})
	}
	wg.Go(func() {
		loop("purge", time.Hour, func() (bool, error) {
			ev, at, err := s.Purge(ctx)
			if ev+at > 0 {
				s.log().Info("webhooks: purged", "events", ev, "attempts", at)
			}
			return false, err
		})
	})
	wg.Wait()
}
