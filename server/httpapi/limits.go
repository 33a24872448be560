package httpapi

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/detach"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
)

// Header names of the rate limit and idempotency contracts (docs/limits.md).
const (
	headerRateLimitPolicy    = "RateLimit-Policy"
	headerRateLimit          = "RateLimit"
	headerRateLimitLimit     = "RateLimit-Limit"
	headerRateLimitRemaining = "RateLimit-Remaining"
	headerRateLimitReset     = "RateLimit-Reset"
	headerIdempotencyKey     = "Idempotency-Key"
	// IdempotentReplayedHeader marks a response replayed from an earlier
	// request with the same Idempotency-Key.
	IdempotentReplayedHeader = "Idempotent-Replayed"
)

// rateLimit applies the per-key (or per-IP) request budget and sets the
// RateLimit headers on every response: reads (GET, HEAD) and writes (every
// other method) have separate budgets. Over budget, it answers 429
// rate_limited with Retry-After.
//
// If the limiter's store fails (Redis down), the request goes through
// unlimited: a cache outage must not take the API down. Each such request is
// logged at WARN and counted in xpromo_ratelimit_failures_total, and carries
// only the headers that do not depend on the count (RateLimit-Policy,
// RateLimit-Limit).
func (s *Server) rateLimit(next http.Handler) http.Handler {
	failures := register(s.registry, prometheus.NewCounter(prometheus.CounterOpts{
		Name: "xpromo_ratelimit_failures_total",
		Help: "Requests let through without rate limiting because the limiter's store failed (fail open).",
	}))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limiter := s.services.Limiter
		// A REST call a tool makes for a request to /mcp was counted as
		// that request (mcp.go): one tool call, one request of the budget.
		if limiter == nil || servingMCP(r.Context()) {
			next.ServeHTTP(w, r)
			return
		}
		p := s.services.WritePolicy
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			p = s.services.ReadPolicy
		}
		bucket := "ip:" + clientIP(r)
		if app := callerApp(r.Context()); app != "" {
			bucket = "app:" + app
		}
		h := w.Header()
		// Structured Field List items (RFC 9651): the name is an sf-string,
		// q and w integers (w in seconds).
		h.Set(headerRateLimitPolicy, `"`+p.Name+`";q=`+strconv.Itoa(p.Limit)+";w="+strconv.Itoa(ceilSeconds(p.Window)))
		h.Set(headerRateLimitLimit, strconv.Itoa(p.Limit))

		d, err := limiter.Allow(r.Context(), bucket, p)
		if err != nil {
			failures.Inc()
			s.log.LogAttrs(r.Context(), levelWarn, "rate limiter unavailable; request let through unlimited",
				errAttr(err), slog.String("bucket", bucket), attrRequestID(r.Context()))
			next.ServeHTTP(w, r)
			return
		}
		reset := ceilSeconds(d.Reset)
		h.Set(headerRateLimit, `"`+p.Name+`";r=`+strconv.Itoa(d.Remaining)+";t="+strconv.Itoa(reset))
		h.Set(headerRateLimitRemaining, strconv.Itoa(d.Remaining))
		h.Set(headerRateLimitReset, strconv.Itoa(reset))
		if !d.Allowed {
			// One instant for every field: reset whole seconds (rounded up,
			// so never earlier than the real reset) from now on the server's
			// clock. retry_after is that instant (with its fraction of a
			// second), Retry-After, RateLimit-Reset and t the same delay.
			at := s.Now().Add(time.Duration(reset) * time.Second)
			e := apperr.New(apperr.RateLimited, "%s limit of %d requests per %d seconds reached; retry after the window resets", p.Name, p.Limit, ceilSeconds(p.Window))
			e.RetryAfter = &at
			s.writeErr(w, r, e)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func ceilSeconds(d time.Duration) int {
	return int(math.Ceil(d.Seconds()))
}

// clientIP is the address the request came from: the host of RemoteAddr.
// Forwarding headers (X-Forwarded-For, Forwarded) are not trusted: any
// client can send them. IPv6 clients are grouped by /64, the block one
// subscriber usually holds, so that rotating addresses within it does not
// multiply the budget.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	addr, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	addr = addr.Unmap().WithZone("")
	if addr.Is6() {
		return netip.PrefixFrom(addr, 64).Masked().String()
	}
	return addr.String()
}

// idempotent makes POSTs replayable under an Idempotency-Key (the header is
// optional). The first request with a key runs and its response is stored;
// a retry with the same key and the same method, path and body gets the
// stored response again, marked Idempotent-Replayed: true, without running
// again. See docs/limits.md for the rules and the reasons behind them.
//
// The request runs as one unit of work (package txunit): its store writes
// join one transaction, in which the response is stored (Finish) before it
// commits. So the effect and its stored answer commit together or not at
// all, and the answer is sent only once both have: a crash at any point
// leaves either both (the retry replays) or neither (the retry runs).
func (s *Server) idempotent(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		svc := s.services.Idempotency
		values := r.Header.Values(headerIdempotencyKey)
		if r.Method != http.MethodPost || svc == nil || len(values) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		if len(values) > 1 {
			s.writeErr(w, r, apperr.New(apperr.InvalidIdempotencyKey, "send one Idempotency-Key header, not %d", len(values)))
			return
		}
		key, err := idempotency.ParseKey(values[0])
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		// The body is part of the request's identity, so it is read here,
		// whole, and handed to each run of the handler as a fresh reader.
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			var tooLarge *http.MaxBytesError
			if errors.As(err, &tooLarge) {
				s.writeErr(w, r, apperr.New(apperr.BodyTooLarge, "the body is larger than %d bytes", MaxBodyBytes))
			} else {
				s.writeErr(w, r, apperr.New(apperr.MalformedJSON, "the body could not be read: %v", err))
			}
			return
		}
		r.Body.Close()
		r.ContentLength = int64(len(body))

		claim, replay, err := svc.Begin(r.Context(), s.idempotencyScope(r), key, idempotency.Fingerprint(r.Method, r.URL.RequestURI(), body))
		if err != nil {
			s.writeErr(w, r, err)
			return
		}
		if replay != nil {
			h := w.Header()
			for k, v := range replay.Headers {
				h[k] = v
			}
			if replay.ContentType != "" {
				h.Set("Content-Type", replay.ContentType)
			}
			h.Set(IdempotentReplayedHeader, "true")
			w.WriteHeader(replay.Status)
			w.Write(replay.Body)
			return
		}
		s.runClaimed(next, w, r, body, claim)
	})
}

// maxUnitAttempts bounds the runs of a keyed request whose unit of work
// conflicts (as the stores bound a transaction's attempts).
const maxUnitAttempts = 10

// runClaimed runs a request whose key it claimed, as one unit of work, and
// sends its answer once the answer is stored (or given up). A unit that
// conflicts rolls back and the request runs again, afresh.
func (s *Server) runClaimed(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte, claim *idempotency.Claim) {
	svc := s.services.Idempotency
	defer svc.Done(claim) // from now on, a claim left in_progress is abandoned
	// The claim outlives the request: storing or releasing it must happen
	// even when the client has gone.
	bg := context.WithoutCancel(r.Context())
	release := func() {
		if err := svc.Release(bg, claim); err != nil {
			s.log.LogAttrs(bg, levelWarn, "releasing an idempotency key failed; retried in the background", errAttr(err), attrRequestID(bg))
		}
	}
	before := w.Header().Clone()
	for attempt := 1; ; attempt++ {
		ctx, rec, unit := s.runUnit(next, w, r, body, claim, release)
		retry, err := s.settle(ctx, w, r, rec, unit, claim, before, release)
		if err == nil {
			return // answered
		}
		if retry && attempt < maxUnitAttempts && r.Context().Err() == nil {
			// Not a failure of the request: its next run answers.
			reason := retryReason(err)
			s.metrics.retry(reason)
			s.log.LogAttrs(bg, slog.LevelDebug, "request run again", slog.String("reason", reason), slog.Int("attempt", attempt), errAttr(err), attrRequestID(bg))
			t := time.NewTimer(unitBackoff(attempt))
			select {
			case <-r.Context().Done():
				t.Stop()
			case <-t.C:
			}
			continue
		}
		release()
		if retry && !apperr.Is(err, apperr.Unavailable) {
			err = apperr.New(apperr.Conflict, "the request conflicted with concurrent ones %d times; retry it (with the same Idempotency-Key)", attempt)
		}
		s.writeErr(w, r, err)
		return
	}
}

// settle ends the unit of one run of a claimed request and sends its answer,
// stored when storable. Or, when the unit ends with nothing committed and no
// answer that may be sent (a conflict, a failed commit), it returns the
// error, retry telling whether running the request again may succeed; the
// claim is still held then.
func (s *Server) settle(ctx context.Context, w http.ResponseWriter, r *http.Request, rec *recorder, unit *txunit.Unit, claim *idempotency.Claim, before http.Header, release func()) (retry bool, err error) {
	svc := s.services.Idempotency
	// Still in the unit. The answer is stored even if the client has gone,
	// but not past the request's deadline: the unit's transaction may open
	// here (a payout's writes are its own), and under a context without a
	// deadline its BEGIN, statements and COMMIT would wait on a database
	// that stopped answering with no bound (issue 31). Past the deadline
	// nothing of the unit commits and the request answers 503.
	bg, cancel := detach.KeepDeadline(ctx)
	defer cancel()
	if failed := unit.Err(); failed != nil {
		// A write failed: the unit can only roll back, taking every write
		// of the request with it.
		if unit.Rollback() {
			return true, failed
		}
		switch {
		case rec.status < 400:
			// A success over a failed write is not an answer to keep.
			return false, fmt.Errorf("a %d answer after a failed write, rolled back: %v", rec.status, failed)
		case storable(rec.status, rec.body.Bytes()):
			// An answer the failed write decided (insufficient funds, not
			// found): nothing of the request is left to commit with it, so
			// it is stored on its own (the unit has ended).
			if _, err := svc.Finish(bg, claim, s.response(before, rec)); err != nil {
				s.log.LogAttrs(bg, levelWarn, "storing an idempotent response failed; a retry runs the request again", errAttr(err), attrRequestID(bg))
				release()
			}
		default:
			release()
		}
		send(w, rec)
		return false, nil
	}
	if !storable(rec.status, rec.body.Bytes()) {
		unit.Rollback()
		release()
		send(w, rec)
		return false, nil
	}
	// The response is stored in the unit's transaction, so it commits with
	// the request's effects, and before it is sent: a client that got it
	// always finds it on retry.
	stored, err := svc.Finish(bg, claim, s.response(before, rec))
	switch {
	case err != nil:
		return unit.Rollback(), err
	case !stored:
		// The claim was taken over (its lease lapsed, or this instance
		// looked dead): the request's effects roll back; the run that took
		// it answers.
		unit.Rollback()
		s.log.LogAttrs(bg, levelWarn, "idempotency claim lost before the response was stored; the request's effects were rolled back", attrRequestID(bg))
		s.writeErr(w, r, apperr.New(apperr.IdempotencyKeyInUse, "a request with this Idempotency-Key is still being processed; retry shortly"))
		return false, nil
	}
	if retry, err := unit.Commit(); err != nil {
		return retry, err
	}
	send(w, rec)
	return false, nil
}

// runUnit runs the handler once, in a unit of work of its own, into a fresh
// recorder. A panicking handler's unit rolls back and its claim is released
// (onPanic) before the panic goes on to the recoverer.
func (s *Server) runUnit(next http.Handler, w http.ResponseWriter, r *http.Request, body []byte, claim *idempotency.Claim, onPanic func()) (context.Context, *recorder, *txunit.Unit) {
	ctx, unit := txunit.Begin(idempotency.WithRef(r.Context(), claim.Ref()))
	rec := &recorder{header: w.Header().Clone(), deferLogs: true}
	in := r.WithContext(ctx)
	in.Body = io.NopCloser(bytes.NewReader(body))
	finished := false
	defer func() {
		if !finished {
			unit.Rollback()
			onPanic()
		}
	}()
	next.ServeHTTP(rec, in)
	finished = true
	if rec.status == 0 {
		rec.status = http.StatusOK // nothing written: net/http would send 200
	}
	return ctx, rec, unit
}

// retryReason labels a run of a keyed request that is run again:
// unavailable (the database failed before anything committed) or conflict.
func retryReason(err error) string {
	// A conflict first: the store's request to create ledger accounts is
	// one, though it also reads as unavailable should it reach a client.
	if errors.Is(err, ledger.ErrConflict) {
		return "conflict"
	}
	if apperr.Is(err, apperr.Unavailable) {
		return "unavailable"
	}
	return "conflict"
}

// unitBackoff is the pause before running a conflicted request again: 1–2 ms
// growing to at most 20 ms, jittered so that the losers of one race do not
// collide again in step.
func unitBackoff(attempt int) time.Duration {
	base := min(20*time.Millisecond, time.Millisecond<<(attempt-1))
	return min(20*time.Millisecond, base+rand.N(base+1))
}

// response is the stored form of a recorded answer.
func (s *Server) response(before http.Header, rec *recorder) idempotency.Response {
	return idempotency.Response{
		Status:      rec.status,
		ContentType: rec.header.Get("Content-Type"),
		Headers:     addedHeaders(before, rec.header),
		Body:        rec.body.Bytes(),
	}
}

// send writes a recorded answer to w, with exactly the recorded headers.
func send(w http.ResponseWriter, rec *recorder) {
	h := w.Header()
	for k := range h {
		if _, ok := rec.header[k]; !ok {
			delete(h, k)
		}
	}
	for k, v := range rec.header {
		h[k] = v
	}
	w.WriteHeader(rec.status)
	w.Write(rec.body.Bytes())
	for _, log := range rec.logs {
		log()
	}
}

// idempotencyScope keeps one caller's keys apart from another's: the API
// key's app, the operators (admin token) or, unauthenticated (POST
// /v1/apps), the client IP. A key is never shared across callers: a
// registration's replay carries its api_key.
func (s *Server) idempotencyScope(r *http.Request) string {
	if scope, ok := r.Context().Value(idempotencyScopeKey{}).(string); ok {
		return scope // a dashboard session's (dashboard.go)
	}
	if app := callerApp(r.Context()); app != "" {
		return "app:" + app
	}
	if token := s.services.AdminToken; token != "" {
		if key, ok := bearer(r.Header.Get("Authorization")); ok && subtle.ConstantTimeCompare([]byte(key), []byte(token)) == 1 {
			return "admin"
		}
	}
	return "ip:" + clientIP(r)
}

// storable tells whether a response is final, to be replayed to retries.
// Not stored, so that a retry with the same key runs again: server errors
// (5xx), 402 (the x402 challenge: the paid retry reuses the key), 429, and
// the 409s that say "another request is running, retry": conflict (a
// transaction conflict) and payout_in_progress. Stored, like any answer,
// are the other 4xx: retrying the same request would get the same answer.
func storable(status int, body []byte) bool {
	switch {
	case status >= 500, status == http.StatusPaymentRequired, status == http.StatusTooManyRequests:
		return false
	case status == http.StatusConflict:
		var e errorBody
		if json.Unmarshal(body, &e) != nil {
			return true
		}
		return e.Error.Code != apperr.Conflict && e.Error.Code != apperr.PayoutInProgress
	}
	return true
}

// addedHeaders returns the headers the handler set or changed, apart from
// Content-Type (stored on its own): those are replayed; the ones set before
// it (request id, rate limit) are fresh on every response.
func addedHeaders(before, after http.Header) http.Header {
	var out http.Header
	for k, v := range after {
		if k == "Content-Type" || slices.Equal(before[k], v) {
			continue
		}
		if out == nil {
			out = http.Header{}
		}
		out[k] = v
	}
	return out
}

// recorder buffers a handler's response so that it can be stored before it
// is sent.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
	// deferLogs: a keyed request's run, whose failures are logged once
	// its answer is sent (logs, run by send), not when it is retried.
	deferLogs bool
	logs      []func()
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
}

func (r *recorder) Write(b []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(b)
}
