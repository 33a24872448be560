// Package idempotency makes POST requests safe to retry: a request repeated
// with the same Idempotency-Key (in the same scope) replays the first
// response instead of running again, exactly once across crashes.
//
// A key is claimed in a short transaction before the request runs (state
// in_progress, recording the claim's holder: the server instance running
// it). The request then runs as one unit of work (package txunit): its
// writes and the stored response (state done) commit in one transaction,
// Finish's, or not at all. So after a crash at any point either the effect
// and its answer both exist, and a retry replays the answer, or neither
// does, and a retry runs the request afresh. An in_progress claim therefore
// never has a committed effect; it is taken over once its holder is known
// dead (the store can tell: Tx.IdempotencyHolderAlive) or, failing that,
// once its lease lapses. docs/limits.md has the rules.
package idempotency

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// Defaults.
const (
	// DefaultTTL is how long a key is remembered after it is first used.
	DefaultTTL = 24 * time.Hour
	// DefaultLease is how long an in_progress claim keeps retries away
	// when the store cannot tell that its holder died; a claim older than
	// that was abandoned (its request crashed) and may be claimed again.
	DefaultLease = 60 * time.Second
	// MaxKeyLen is the longest Idempotency-Key accepted.
	MaxKeyLen = 255
)

// State of a stored key.
type State string

const (
	InProgress State = "in_progress"
	Done       State = "done"
)

// Record is one stored key: table idempotency_keys.
type Record struct {
	Scope       string
	Key         string // StoredKey of the Idempotency-Key, never the key itself
	Claim       string // random id of the claim that holds the row
	Holder      string // the server instance running the claim's request ("" if unknown)
	Fingerprint []byte // sha256 of the request, see Fingerprint
	State       State
	// The stored response, once State is Done.
	Status      int
	ContentType string
	Headers     http.Header // other response headers worth replaying (e.g. Location)
	Body        []byte      // sealed: see seal
	CreatedAt   time.Time   // when the current claim was taken
	ExpiresAt   time.Time   // first claim + TTL; after it the key is forgotten
}

// Tx is what idempotency needs from a transaction.
type Tx interface {
	// InsertIdempotencyKey inserts r unless a row with its scope and key
	// exists (whatever its state), reporting whether it inserted.
	InsertIdempotencyKey(ctx context.Context, r Record) (bool, error)
	// LockIdempotencyKey reads the row (scope, key) and locks it until the
	// transaction ends; found is false when there is none.
	LockIdempotencyKey(ctx context.Context, scope, key string) (r Record, found bool, err error)
	// ReplaceIdempotencyKey overwrites the row with r's scope and key.
	ReplaceIdempotencyKey(ctx context.Context, r Record) error
	// FinishIdempotencyKey stores r's response and sets state done, if the
	// row is still in_progress under claim r.Claim; it reports whether it was.
	FinishIdempotencyKey(ctx context.Context, r Record) (bool, error)
	// ReleaseIdempotencyKey marks the row released if it is still
	// in_progress under claim (its created_at set to ReleasedAt; the row and
	// its expiry stay); it reports whether it was.
	ReleaseIdempotencyKey(ctx context.Context, scope, key, claim string) (bool, error)
	// IdempotencyHolderAlive reports whether the server instance holder (a
	// Record's Holder) may still be running requests. It answers false only
	// when the store knows the holder died: SQLite, whose file one server
	// process owns, for every holder but the owner; PostgreSQL when the
	// holder's advisory lock is free. Unknown holders are alive.
	IdempotencyHolderAlive(ctx context.Context, holder string) (bool, error)
	// PurgeIdempotencyKeys deletes up to limit rows expired at now and
	// returns how many it deleted.
	PurgeIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error)
}

// Service keeps Idempotency-Keys. Update and Now are required.
type Service struct {
	Update func(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Now    func() time.Time
	TTL    time.Duration // 0 means DefaultTTL
	Lease  time.Duration // 0 means DefaultLease
	// Holder is this server instance's id, recorded on its claims so that
	// another instance can tell when they were abandoned (see
	// Tx.IdempotencyHolderAlive). Set it only once the store holds the
	// instance (storage.InstanceHolder); "" records no holder, and
	// abandoned claims wait out their lease.
	Holder string

	mu      sync.Mutex
	running map[string]bool // ids of the claims this process is running (Begin to Done)
}

// Claim is a held key: the request it guards may run. Finish or Release it.
type Claim struct {
	Scope   string
	Key     string    // as stored: StoredKey of the Idempotency-Key
	ID      string    // the claim's random id
	Expires time.Time // when the key is forgotten
	seal    cipher.AEAD
	taken   time.Time // when Begin took it (real time: it paces background releases)
}

// Ref is the reference the claimed request runs under (WithRef).
func (c *Claim) Ref() Ref { return Ref{Scope: c.Scope, Key: c.Key, Expires: c.Expires} }

// Response is a stored response.
type Response struct {
	Status      int
	ContentType string
	Headers     http.Header
	Body        []byte
}

// ParseKey validates an Idempotency-Key header value. The value is 1 to 255
// printable ASCII characters, sent bare (as most clients do) or as an RFC
// 9651 Structured Field string (`"…"`, as the IETF draft specifies), which is
// unquoted first.
func ParseKey(v string) (string, error) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		var sb strings.Builder
		for i := 1; i < len(v)-1; i++ {
			c := v[i]
			if c == '\\' && i+1 < len(v)-1 && (v[i+1] == '"' || v[i+1] == '\\') {
				i++
				c = v[i]
			} else if c == '"' || c == '\\' {
				return "", invalidKey()
			}
			sb.WriteByte(c)
		}
		v = sb.String()
	}
	if v == "" || len(v) > MaxKeyLen {
		return "", invalidKey()
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x20 || v[i] > 0x7e {
			return "", invalidKey()
		}
	}
	return v, nil
}

func invalidKey() error {
	return apperr.New(apperr.InvalidIdempotencyKey, "the Idempotency-Key header must be 1 to %d printable ASCII characters (a UUID is a good choice)", MaxKeyLen)
}

// Fingerprint identifies a request: sha256 over its method, path (with the
// query, if any) and body. Fields are length-prefixed so that no two
// requests share a fingerprint by shifting bytes from one field to another.
func Fingerprint(method, path string, body []byte) []byte {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(method), []byte(path), body} {
		fmt.Fprintf(h, "%d:", len(part))
		h.Write(part)
	}
	return h.Sum(nil)
}

func (s *Service) ttl() time.Duration {
	if s.TTL > 0 {
		return s.TTL
	}
	return DefaultTTL
}

func (s *Service) lease() time.Duration {
	if s.Lease > 0 {
		return s.Lease
	}
	return DefaultLease
}

// Begin claims idempotencyKey in scope for a request with the given
// fingerprint (see Fingerprint). It returns the claim when the request
// should run, or the stored response when it already ran (replay), or an
// *apperr.Error: idempotency_key_reused (the key was used for a different
// request) or idempotency_key_in_use (the first request is still running).
//
// An in_progress claim whose holder died, or whose lease lapsed, is taken
// over: its request ran as a unit that never committed, so running it again
// is safe. The key keeps its expiry (it is kept TTL from its first use).
func (s *Service) Begin(ctx context.Context, scope, idempotencyKey string, fingerprint []byte) (*Claim, *Response, error) {
	key := StoredKey(idempotencyKey)
	aead := seal(scope, idempotencyKey)
	var claim *Claim
	var replay *Response
	var tried []string // claim ids of the attempts, tracked as running
	defer func() {
		for _, id := range tried {
			if claim == nil || id != claim.ID {
				s.untrack(id)
			}
		}
	}()
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		claim, replay = nil, nil
		now := s.Now().UTC().Truncate(time.Microsecond) // as stored
		r := Record{
			Scope: scope, Key: key, Claim: newClaimID(), Holder: s.Holder, Fingerprint: fingerprint, State: InProgress,
			CreatedAt: now, ExpiresAt: now.Add(s.ttl()),
		}
		// Tracked before the claim commits: a retry of this key in this
		// process must not find it abandoned in between.
		s.track(r.Claim)
		tried = append(tried, r.Claim)
		inserted, err := tx.InsertIdempotencyKey(ctx, r)
		if err != nil {
			return err
		}
		if !inserted {
			old, found, err := tx.LockIdempotencyKey(ctx, scope, key)
			if err != nil {
				return err
			}
			if !found {
				// Deleted (released or purged) since the insert saw it:
				// run again, when the insert will win.
				return fmt.Errorf("%w: idempotency key %s vanished", ledger.ErrConflict, key)
			}
			expired := !now.Before(old.ExpiresAt)
			abandoned := old.State == InProgress && !now.Before(old.CreatedAt.Add(s.lease()))
			if old.State == InProgress && old.CreatedAt.Equal(ReleasedAt) && !bytes.Equal(old.Fingerprint, fingerprint) {
				// Released, and now used for another request: forgotten,
				// as if it had expired. The same request takes it over
				// below (released is abandoned) and keeps its expiry.
				expired = true
			}
			switch {
			case expired || abandoned || old.State != InProgress || !bytes.Equal(old.Fingerprint, fingerprint):
			case old.Holder != "" && old.Holder == s.Holder:
				// This process's own claim: abandoned unless one of its
				// requests still runs it (a run that failed while the
				// database was away could not release it).
				abandoned = !s.isRunning(old.Claim)
			case old.Holder != s.Holder:
				alive, err := tx.IdempotencyHolderAlive(ctx, old.Holder)
				if err != nil {
					return err
				}
				abandoned = !alive
			}
			if !expired {
				r.ExpiresAt = old.ExpiresAt // a takeover continues the key's life
			}
			switch {
			case expired:
				// Forgotten: the key starts afresh, whatever it was used for.
			case !bytes.Equal(old.Fingerprint, fingerprint):
				return apperr.New(apperr.IdempotencyKeyReused, "this Idempotency-Key was used within the last %s for a different request (method, path or body); use a new key for a new request", s.ttl().Round(time.Minute))
			case old.State == Done:
				body, err := open(aead, old.Body)
				if err != nil {
					return fmt.Errorf("idempotency: stored response of %s in %s: %w", key, scope, err)
				}
				replay = &Response{Status: old.Status, ContentType: old.ContentType, Headers: old.Headers, Body: body}
				return nil
			case !abandoned:
				return apperr.New(apperr.IdempotencyKeyInUse, "a request with this Idempotency-Key is still being processed; retry shortly")
			}
			if err := tx.ReplaceIdempotencyKey(ctx, r); err != nil {
				return err
			}
		}
		claim = &Claim{Scope: scope, Key: key, ID: r.Claim, Expires: r.ExpiresAt, seal: aead, taken: time.Now()}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return claim, replay, nil
}

// Finish stores the response of a claimed request, to be replayed to its
// retries. It returns false when the claim was lost in the meantime (its
// lease lapsed, or its holder looked dead, and another request took the
// key), in which case nothing is stored. Called under the request's unit of
// work (txunit), it joins the unit's transaction: the response commits with
// the request's effects, and a false answer means the unit must roll back.
func (s *Service) Finish(ctx context.Context, c *Claim, resp Response) (bool, error) {
	var nonce [12]byte
	if _, err := rand.Read(nonce[:]); err != nil {
		return false, err
	}
	sealed := c.seal.Seal(nonce[:], nonce[:], resp.Body, nil)
	var ok bool
	err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
		var err error
		ok, err = tx.FinishIdempotencyKey(ctx, Record{
			Scope: c.Scope, Key: c.Key, Claim: c.ID, State: Done,
			Status: resp.Status, ContentType: resp.ContentType, Headers: resp.Headers, Body: sealed,
		})
		return err
	})
	return ok, err
}

// ReleasedAt is the created_at of a released key's row (Release): a claim
// abandoned at once. The row stays, with its expiry, so that the retry that
// takes it over runs as the same request (the same Ref.ID): effects that
// commit before the answer is stored (a payout's reservation) are found by
// that retry, not made again or refused (issue 31: a payout the provider
// had sent, answered below_minimum to its retries once the recovery pass
// settled it, because each retry after the 503 was a new request). Another
// request using the key (another fingerprint) starts it afresh, as after
// its expiry.
var ReleasedAt = time.Unix(0, 0).UTC()

// Release gives a claimed key up without storing a response, so that a
// retry runs the request again (after a server error, a 402 or a 429). When
// the store cannot be reached (a failover) within releaseWait, it returns
// the error and keeps trying in the background, for as long as the claim's
// lease would keep retries away, so that other instances need not wait it
// out; a retry reaching this process takes the claim over at once anyway
// (Done).
func (s *Service) Release(ctx context.Context, c *Claim) error {
	rctx, cancel := context.WithTimeout(ctx, releaseWait)
	defer cancel()
	err := s.release(rctx, c)
	if err != nil {
		go s.releaseLater(context.WithoutCancel(ctx), c)
	}
	return err
}

// releaseWait bounds Release's first try; releaseEvery paces the
// background ones.
const (
	releaseWait  = 2 * time.Second
	releaseEvery = time.Second
)

func (s *Service) release(ctx context.Context, c *Claim) error {
	return s.Update(ctx, func(ctx context.Context, tx Tx) error {
		_, err := tx.ReleaseIdempotencyKey(ctx, c.Scope, c.Key, c.ID)
		return err
	})
}

func (s *Service) releaseLater(ctx context.Context, c *Claim) {
	for time.Since(c.taken) < s.lease() {
		time.Sleep(releaseEvery)
		rctx, cancel := context.WithTimeout(ctx, releaseWait)
		err := s.release(rctx, c)
		cancel()
		if err == nil {
			return
		}
	}
}

// Done tells that this process no longer runs the request of c (it
// answered, or gave up): a claim it left in_progress, one it could not
// release, is then abandoned, and a retry here takes it over at once.
func (s *Service) Done(c *Claim) { s.untrack(c.ID) }

func (s *Service) track(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running == nil {
		s.running = map[string]bool{}
	}
	s.running[id] = true
}

func (s *Service) untrack(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.running, id)
}

func (s *Service) isRunning(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[id]
}

// purgeBatch bounds the rows one purge transaction deletes, so a large
// backlog never holds a long lock.
const purgeBatch = 1000

// Purge deletes the expired keys, in batches, and returns how many it
// deleted. The server runs it periodically; expired keys are ignored anyway,
// so it only reclaims space.
func (s *Service) Purge(ctx context.Context) (int, error) {
	total := 0
	for {
		var n int
		err := s.Update(ctx, func(ctx context.Context, tx Tx) error {
			var err error
			n, err = tx.PurgeIdempotencyKeys(ctx, s.Now().UTC(), purgeBatch)
			return err
		})
		total += n
		if err != nil || n < purgeBatch {
			return total, err
		}
	}
}

// StoredKey is how an Idempotency-Key is stored: its SHA-256, hex. The key
// itself is never stored, and response bodies are stored sealed under it
// (see seal), so the table reveals no response (a registration's api_key in
// particular) to anyone who does not hold the client's key: not a database
// dump, not a backup.
func StoredKey(idempotencyKey string) string {
	sum := sha256.Sum256([]byte("xpromo idempotency key\x00" + idempotencyKey))
	return hex.EncodeToString(sum[:])
}

// seal returns the AEAD (AES-256-GCM) that seals the stored response of
// idempotencyKey in scope, under a key derived from both. Its strength is
// the Idempotency-Key's entropy: clients are told to use random UUIDs.
func seal(scope, idempotencyKey string) cipher.AEAD {
	k := sha256.Sum256([]byte("xpromo idempotency body\x00" + scope + "\x00" + idempotencyKey))
	block, err := aes.NewCipher(k[:])
	if err != nil {
		panic(err) // a 32-byte key is always valid
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		panic(err)
	}
	return aead
}

// open reverses Finish's sealing: nonce || ciphertext.
func open(aead cipher.AEAD, sealed []byte) ([]byte, error) {
	n := aead.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("sealed body too short")
	}
	body, err := aead.Open(nil, sealed[:n], sealed[n:], nil)
	if body == nil && err == nil {
		body = []byte{}
	}
	return body, err
}

func newClaimID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return hex.EncodeToString(b[:])
}

// Ref names the Idempotency-Key a request runs under: its scope and the key
// as stored (StoredKey), never the raw header value, and when the key is
// forgotten: a key used again after that is a new request.
type Ref struct {
	Scope   string
	Key     string
	Expires time.Time
}

// ID names the request of r: one use of one key in one scope, the same for
// every run of the request (a retry after a crash, a conflict) and different
// for the next request that uses the key once it expired. Effects that must
// happen once per request derive their keys from it (an adjustment's ledger
// key, a payout). It is 32 lowercase hex characters.
func (r Ref) ID() string {
	// Microseconds: the precision both stores keep.
	sum := sha256.Sum256([]byte("xpromo idempotent request\x00" + r.Scope + "\x00" + r.Key + "\x00" + strconv.FormatInt(r.Expires.UnixMicro(), 10)))
	return hex.EncodeToString(sum[:16])
}

type refKey struct{}

// WithRef returns ctx carrying the request's idempotency key.
func WithRef(ctx context.Context, r Ref) context.Context {
	return context.WithValue(ctx, refKey{}, r)
}

// RefFrom returns the idempotency key the request of ctx runs under; ok is
// false when it was sent without one.
func RefFrom(ctx context.Context) (r Ref, ok bool) {
	r, ok = ctx.Value(refKey{}).(Ref)
	return r, ok
}

// EncodeHeaders is how the stores keep a stored answer's headers: a JSON
// object ("{}" when there are none).
func EncodeHeaders(h http.Header) (string, error) {
	if len(h) == 0 {
		return "{}", nil
	}
	b, err := json.Marshal(h)
	return string(b), err
}

// DecodeHeaders reads what EncodeHeaders wrote (nil when it held none).
func DecodeHeaders(s string) (http.Header, error) {
	var h http.Header
	if err := json.Unmarshal([]byte(s), &h); err != nil {
		return nil, fmt.Errorf("idempotency_keys.headers: %w", err)
	}
	if len(h) == 0 {
		return nil, nil
	}
	return h, nil
}
