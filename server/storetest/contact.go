package storetest

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/clocktest"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gate/sandbox"
	"github.com/xpromo/xpromo/server/storage"
)

// Contact runs the suite of contact.Store (the gate's contact challenges)
// on a fresh store from newStore: the sqlite and postgres packages call it
// from their tests.
func Contact(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Run("Challenges", func(t *testing.T) { testChallenges(t, newStore(t)) })
	t.Run("ConcurrentConsumeOneWins", func(t *testing.T) { testConcurrentConsume(t, newStore(t)) })
	t.Run("ConcurrentCodeAttemptsCounted", func(t *testing.T) { testConcurrentCodeAttempts(t, newStore(t)) })
	t.Run("ServiceEndToEnd", func(t *testing.T) { testContactService(t, newStore(t)) })
}

var chStart = time.Date(2026, 11, 21, 9, 0, 0, 123456000, time.UTC) // microsecond precision, as both stores keep

func challenge(id, subject string, at time.Time) contact.Challenge {
	h := sha256.Sum256([]byte("token of " + id))
	return contact.Challenge{
		ID: id, Subject: subject, Email: "dev@example.com", TokenHash: h[:],
		CodeSalt: []byte("0123456789abcdef"), CodeHash: []byte("code hash of " + id),
		CreatedAt: at, ExpiresAt: at.Add(24 * time.Hour),
	}
}

func testChallenges(t *testing.T, s storage.Store) {
	ctx := context.Background()
	cs := storage.ContactStore(s)

	_, err := cs.LatestChallenge(ctx, "app_1")
	require.ErrorIs(t, err, contact.ErrNotFound)
	_, err = cs.ChallengeByTokenHash(ctx, make([]byte, 32))
	require.ErrorIs(t, err, contact.ErrNotFound)

	a := challenge("cch_a", "app_1", chStart)
	require.NoError(t, cs.InsertChallenge(ctx, a))
	got, err := cs.ChallengeByTokenHash(ctx, a.TokenHash)
	require.NoError(t, err)
	assert.Equal(t, a, got) // every field, times in UTC, UsedAt zero, no attempts

	// The token hash is unique: a second challenge cannot share it.
	dup := challenge("cch_dup", "app_2", chStart)
	dup.TokenHash = a.TokenHash
	require.Error(t, cs.InsertChallenge(ctx, dup))

	// Newest first; two created in the same microsecond: the later insert.
	b := challenge("cch_b", "app_1", chStart.Add(time.Minute))
	c := challenge("cch_c", "app_1", chStart.Add(time.Minute))
	other := challenge("cch_o", "app_2", chStart.Add(time.Hour))
	for _, x := range []contact.Challenge{b, c, other} {
		require.NoError(t, cs.InsertChallenge(ctx, x))
	}
	latest, err := cs.LatestChallenge(ctx, "app_1")
	require.NoError(t, err)
	assert.Equal(t, "cch_c", latest.ID)

	// Strictly after since, oldest first, this subject's only.
	times, err := cs.ChallengesSince(ctx, "app_1", chStart)
	require.NoError(t, err)
	assert.Equal(t, []time.Time{b.CreatedAt, c.CreatedAt}, times)
	times, err = cs.ChallengesSince(ctx, "app_1", chStart.Add(-time.Microsecond))
	require.NoError(t, err)
	assert.Len(t, times, 3)
	times, err = cs.ChallengesSince(ctx, "app_3", chStart.Add(-time.Hour))
	require.NoError(t, err)
	assert.Empty(t, times)

	// Consumed once.
	used := chStart.Add(2 * time.Minute)
	won, err := cs.ConsumeChallenge(ctx, "cch_b", used)
	require.NoError(t, err)
	assert.True(t, won)
	won, err = cs.ConsumeChallenge(ctx, "cch_b", used.Add(time.Second))
	require.NoError(t, err)
	assert.False(t, won)
	got, err = cs.ChallengeByTokenHash(ctx, b.TokenHash)
	require.NoError(t, err)
	assert.Equal(t, used, got.UsedAt)
	won, err = cs.ConsumeChallenge(ctx, "cch_none", used)
	require.NoError(t, err)
	assert.False(t, won)

	// Code attempts count up, per challenge.
	for want := 1; want <= 3; want++ {
		n, err := cs.AddCodeAttempt(ctx, "cch_c")
		require.NoError(t, err)
		assert.Equal(t, want, n)
	}
	got, err = cs.LatestChallenge(ctx, "app_1")
	require.NoError(t, err)
	assert.Equal(t, 3, got.CodeAttempts)
	_, err = cs.AddCodeAttempt(ctx, "cch_none")
	require.ErrorIs(t, err, contact.ErrNotFound)
}

func testConcurrentConsume(t *testing.T, s storage.Store) {
	ctx := context.Background()
	cs := storage.ContactStore(s)
	require.NoError(t, cs.InsertChallenge(ctx, challenge("cch_race", "app_1", chStart)))
	const n = 8
	var wg sync.WaitGroup
	wins := make(chan int, n)
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			won, err := cs.ConsumeChallenge(ctx, "cch_race", chStart.Add(time.Duration(i+1)*time.Second))
			if err != nil {
				errs <- err
			}
			if won {
				wins <- i
			}
		}()
	}
	wg.Wait()
	close(wins)
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	var winners []int
	for i := range wins {
		winners = append(winners, i)
	}
	require.Len(t, winners, 1, "exactly one of the concurrent answers wins")
	got, err := cs.LatestChallenge(ctx, "app_1")
	require.NoError(t, err)
	assert.Equal(t, chStart.Add(time.Duration(winners[0]+1)*time.Second), got.UsedAt, "the winner's time is kept")
}

func testConcurrentCodeAttempts(t *testing.T, s storage.Store) {
	ctx := context.Background()
	cs := storage.ContactStore(s)
	require.NoError(t, cs.InsertChallenge(ctx, challenge("cch_guess", "app_1", chStart)))
	const n = 20
	var wg sync.WaitGroup
	var mu sync.Mutex
	var counts []int
	var errs []error
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := cs.AddCodeAttempt(ctx, "cch_guess")
			mu.Lock()
			defer mu.Unlock()
			counts, errs = append(counts, c), append(errs, err)
		}()
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
	sort.Ints(counts)
	want := make([]int, n)
	for i := range want {
		want[i] = i + 1
	}
	assert.Equal(t, want, counts, "each attempt sees its own count")
	got, err := cs.LatestChallenge(ctx, "app_1")
	require.NoError(t, err)
	assert.Equal(t, n, got.CodeAttempts)
}

// codeMailer keeps the messages sent, for the test to read their codes.
type codeMailer struct{ msgs chan contact.Message }

func (m codeMailer) Send(ctx context.Context, msg contact.Message) error {
	m.msgs <- msg
	return nil
}

var codeRE = regexp.MustCompile(`(?m)^\s+(\d{6})\s*$`)

// testContactService runs contact.Service on the store: the link through
// the test-mode sandbox's inbox (which reads the rendered email and follows
// its link), the code as a reader would type it.
func testContactService(t *testing.T, s storage.Store) {
	ctx := context.Background()
	clock := clocktest.New(chStart)
	sb, err := sandbox.New(clock.Now)
	require.NoError(t, err)
	defer sb.Close()

	var svc *contact.Service
	followed := make(chan contact.Verification, 1)
	mailer := sb.Mailer(nil, func(ctx context.Context, link string) error {
		v, err := svc.VerifyToken(ctx, tokenOf(link))
		followed <- v
		return err
	})
	svc, err = contact.New(contact.Config{Store: storage.ContactStore(s), Mailer: mailer, VerifyURL: "http://127.0.0.1:8080/v1/contact/verify", Now: clock.Now})
	require.NoError(t, err)

	sent, err := svc.Send(ctx, contact.Request{Subject: "app_link", Email: "dev@example.com", AppName: "Hello"})
	require.NoError(t, err)
	select {
	case v := <-followed:
		require.Equal(t, contact.StatusOK, v.Status)
		assert.Equal(t, sent.ChallengeID, v.ChallengeID)
	case <-time.After(time.Minute):
		t.Fatal("the sandbox inbox never followed the link")
	}
	c, err := storage.ContactStore(s).LatestChallenge(ctx, "app_link")
	require.NoError(t, err)
	assert.Equal(t, clock.Now(), c.UsedAt)

	// Resending at once is limited.
	_, err = svc.Send(ctx, contact.Request{Subject: "app_link", Email: "dev@example.com"})
	var le *contact.LimitError
	require.ErrorAs(t, err, &le)
	assert.Equal(t, chStart.Add(contact.DefaultResendInterval), le.RetryAfter)

	// bounce@ is refused for good.
	_, err = svc.Send(ctx, contact.Request{Subject: "app_bounce", Email: "bounce@example.com"})
	assert.Equal(t, contact.ReasonContactUndeliverable, contact.ReasonFor(err))

	// The code, with a wrong guess first; a newer challenge supersedes.
	codes := codeMailer{msgs: make(chan contact.Message, 4)}
	svc2, err := contact.New(contact.Config{Store: storage.ContactStore(s), Mailer: codes, VerifyURL: "https://api.example.com/v1/contact/verify", Now: clock.Now})
	require.NoError(t, err)
	_, err = svc2.Send(ctx, contact.Request{Subject: "app_code", Email: "dev@acme.test"})
	require.NoError(t, err)
	first := <-codes.msgs
	clock.Advance(2 * time.Minute)
	_, err = svc2.Send(ctx, contact.Request{Subject: "app_code", Email: "dev@acme.test"})
	require.NoError(t, err)
	second := <-codes.msgs
	v, err := svc2.VerifyToken(ctx, tokenOf(linkRE.FindString(first.Text)))
	require.NoError(t, err)
	assert.Equal(t, contact.StatusExpired, v.Status, "a superseded link")

	code := codeRE.FindStringSubmatch(second.Text)
	require.NotNil(t, code, second.Text)
	wrong := fmt.Sprintf("%06d", (atoi(code[1])+1)%1_000_000)
	v, err = svc2.VerifyCode(ctx, "app_code", wrong)
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUnknown, v.Status)
	assert.Equal(t, contact.DefaultMaxCodeAttempts-1, v.AttemptsLeft)
	v, err = svc2.VerifyCode(ctx, "app_code", code[1])
	require.NoError(t, err)
	assert.Equal(t, contact.StatusOK, v.Status)
	v, err = svc2.VerifyCode(ctx, "app_code", code[1])
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUsed, v.Status)
	v, err = svc2.VerifyToken(ctx, tokenOf(linkRE.FindString(second.Text)))
	require.NoError(t, err)
	assert.Equal(t, contact.StatusUsed, v.Status)
}

var linkRE = regexp.MustCompile(`https?://\S+`)

func tokenOf(link string) string {
	u, err := url.Parse(link)
	if err != nil {
		return ""
	}
	return u.Query().Get("token")
}

func atoi(s string) int {
	n := 0
	for _, r := range s {
		n = n*10 + int(r-'0')
	}
	return n
}
