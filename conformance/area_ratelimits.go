package conformance

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Rate limits: RateLimit-Policy and RateLimit (IETF httpapi-ratelimit-headers
// draft) on every response, 429 with Retry-After and rate_limited
// (seed-api "Limits"; decisions §9).
func rateLimitChecks() []Check {
	return []Check{
		{"every answer carries RateLimit-Policy and RateLimit", checkRateLimitHeaders},
		{"the remaining budget counts down per request", checkRateLimitCountdown},
		{"writes are limited more strictly than reads", checkReadWritePolicies},
		{"an exhausted write budget answers 429 with Retry-After; reads and other keys go on", checkRateLimited},
	}
}

// maxExhaust is the most requests the suite sends to exhaust a budget; a
// target allowing more per window is not driven to 429 (the check is
// skipped, saying so).
const maxExhaust = 2000

// rlItem is one member of a RateLimit-Policy or RateLimit list: a name and
// its integer parameters.
type rlItem struct {
	name   string
	params map[string]int
}

// parseRLList parses a Structured Field List of items with integer
// parameters, the shape of RateLimit-Policy and RateLimit:
// `"write";q=60;w=60` or `"write";r=57;t=42`.
func parseRLList(v string) ([]rlItem, error) {
	var out []rlItem
	for member := range strings.SplitSeq(v, ",") {
		member = strings.TrimSpace(member)
		if member == "" {
			continue
		}
		parts := strings.Split(member, ";")
		name := strings.TrimSpace(parts[0])
		if len(name) >= 2 && name[0] == '"' && name[len(name)-1] == '"' {
			name = name[1 : len(name)-1]
		}
		if name == "" {
			return nil, fmt.Errorf("member %q has no name", member)
		}
		it := rlItem{name: name, params: map[string]int{}}
		for _, p := range parts[1:] {
			k, val, ok := strings.Cut(strings.TrimSpace(p), "=")
			if !ok {
				return nil, fmt.Errorf("parameter %q of %q has no value", p, member)
			}
			n, err := strconv.Atoi(val)
			if err != nil {
				return nil, fmt.Errorf("parameter %q of %q is not an integer", p, member)
			}
			it.params[k] = n
		}
		out = append(out, it)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("empty list")
	}
	return out, nil
}

// rlState is the rate-limit state an answer announced.
type rlState struct {
	policy         string
	quota, window  int // q, w
	remaining, ttl int // r, t
}

// rateLimitOf parses and checks the RateLimit headers of ex: both present,
// well-formed, naming the same policy, with sane numbers; the legacy
// RateLimit-Limit/-Remaining/-Reset, when sent, agree.
func rateLimitOf(c *C, ex Exchange) (rlState, bool) {
	c.Helper()
	what := fmt.Sprintf("%s %s → %d", ex.Method, ex.URL, ex.Status)
	pol, rl := ex.Header.Get("RateLimit-Policy"), ex.Header.Get("RateLimit")
	if pol == "" || rl == "" {
		c.Errorf("%s: RateLimit-Policy %q and RateLimit %q, want both", what, pol, rl)
		return rlState{}, false
	}
	pols, err := parseRLList(pol)
	if err != nil {
		c.Errorf("%s: RateLimit-Policy %q: %v", what, pol, err)
		return rlState{}, false
	}
	rls, err := parseRLList(rl)
	if err != nil {
		c.Errorf("%s: RateLimit %q: %v", what, rl, err)
		return rlState{}, false
	}
	p, r := pols[0], rls[0]
	st := rlState{policy: p.name, quota: p.params["q"], window: p.params["w"], remaining: r.params["r"], ttl: r.params["t"]}
	_, hasQ := p.params["q"]
	_, hasR := r.params["r"]
	_, hasT := r.params["t"]
	switch {
	case r.name != p.name:
		c.Errorf("%s: RateLimit names policy %q, RateLimit-Policy %q", what, r.name, p.name)
	case !hasQ || st.quota <= 0:
		c.Errorf("%s: RateLimit-Policy %q has no positive q", what, pol)
	case st.window <= 0:
		c.Errorf("%s: RateLimit-Policy %q has no positive w (the draft's default is 60 only when w is absent)", what, pol)
	case !hasR || !hasT || st.remaining < 0 || st.remaining > st.quota || st.ttl < 0 || st.ttl > st.window:
		c.Errorf("%s: RateLimit %q is out of range for policy %q", what, rl, pol)
	default:
		checkLegacy(c, what, ex.Header, st)
		return st, true
	}
	return st, false
}

// checkLegacy: RateLimit-Limit, -Remaining and -Reset, when sent, say the
// same as the draft's headers.
func checkLegacy(c *C, what string, h http.Header, st rlState) {
	c.Helper()
	for name, want := range map[string]int{"RateLimit-Limit": st.quota, "RateLimit-Remaining": st.remaining, "RateLimit-Reset": st.ttl} {
		v := h.Get(name)
		if v == "" {
			continue
		}
		if n, err := strconv.Atoi(v); err != nil || n != want {
			c.Errorf("%s: %s is %q, RateLimit says %d", what, name, v, want)
		}
	}
}

func checkRateLimitHeaders(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	var exs []Exchange
	_, err := c.Public().GetRateCard(ctx)
	c.NoError(err, "rate card")
	exs = append(exs, c.Last())
	_, err = a.Client.GetScore(ctx, a.ID)
	c.NoError(err, "score")
	exs = append(exs, c.Last())
	_, _ = c.Public().GetScore(ctx, a.ID) // 401
	exs = append(exs, c.Last())
	_, _ = a.Client.GetScore(ctx, missingLike(a.ID)) // 404
	exs = append(exs, c.Last())
	_, _ = a.Client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: 1}) // 422
	exs = append(exs, c.Last())
	_, err = a.Client.CreateCampaign(ctx, &xpromo.CreateCampaignRequest{AppID: a.ID, Categories: []string{someCategory(c)}, DailyBudgetCents: 1000}) // 201
	c.NoError(err, "campaign")
	exs = append(exs, c.Last())
	for _, ex := range exs {
		rateLimitOf(c, ex)
	}
}

func checkRateLimitCountdown(c *C) {
	a := c.NewApp()
	for _, op := range []struct {
		name string
		call func() error
	}{
		{"GET score", func() error { _, err := a.Client.GetScore(c.Ctx(), a.ID); return err }},
		{"POST pause", func() error { _, err := a.Client.PauseCampaign(c.Ctx(), missingLike(a.ID)); return err }},
	} {
		_ = op.call()
		first, ok1 := rateLimitOf(c, c.Last())
		_ = op.call()
		second, ok2 := rateLimitOf(c, c.Last())
		if !ok1 || !ok2 {
			continue
		}
		// Unless the window turned over in between, one request took one.
		if second.remaining != first.remaining-1 && second.remaining != second.quota-1 {
			c.Errorf("%s twice: remaining went from %d to %d, want %d", op.name, first.remaining, second.remaining, first.remaining-1)
		}
	}
}

func checkReadWritePolicies(c *C) {
	a := c.NewApp()
	_, err := a.Client.GetScore(c.Ctx(), a.ID)
	c.NoError(err, "score")
	read, ok1 := rateLimitOf(c, c.Last())
	_, _ = a.Client.PauseCampaign(c.Ctx(), missingLike(a.ID))
	write, ok2 := rateLimitOf(c, c.Last())
	if !ok1 || !ok2 {
		return
	}
	if read.policy == write.policy {
		c.Errorf("reads and writes share the policy %q; the API document wants stricter limits for writes", read.policy)
	}
	if float64(write.quota)/float64(write.window) >= float64(read.quota)/float64(read.window) {
		c.Errorf("write policy %q (%d per %d s) is not stricter than read policy %q (%d per %d s)",
			write.policy, write.quota, write.window, read.policy, read.quota, read.window)
	}
}

func checkRateLimited(c *C) {
	a := c.NewApp()
	ctx := c.Ctx()
	// No retries: the 429 must reach the check.
	cl := c.AsApp(a.Key, xpromo.WithRetries(0))
	write := func() error { _, err := cl.PauseCampaign(ctx, missingLike(a.ID)); return err }
	_ = write()
	st, ok := rateLimitOf(c, c.Last())
	if !ok {
		return
	}
	if st.quota > maxExhaust {
		c.Skipf("the write policy allows %d requests per %d s; the suite drives at most %d to 429: run the target with a lower write limit", st.quota, st.window, maxExhaust)
	}
	var err error
	for range st.remaining + 1 {
		if err = write(); xpromo.IsCode(err, "rate_limited") {
			break
		}
	}
	e := c.ExpectError(err, http.StatusTooManyRequests, "rate_limited", fmt.Sprintf("write %d of a budget of %d", st.remaining+2, st.quota))
	ex := c.Last()
	checkErrorBody(c, ex)
	if e.RetryAfter == nil {
		c.Errorf("429: error.retry_after is null, want the instant the window resets")
	}
	// Retry-After is delay-seconds up to the window's end. A server that
	// rounds the reset instant up to a whole second and then the delay up
	// again can say one second more than the window; never more.
	ra, convErr := strconv.Atoi(ex.Header.Get("Retry-After"))
	if convErr != nil || ra < 0 || ra > st.window+1 {
		c.Errorf("429: Retry-After %q, want delay-seconds within the %d s window", ex.Header.Get("Retry-After"), st.window)
	}
	if after, ok := rateLimitOf(c, ex); ok && after.remaining != 0 {
		c.Errorf("429: RateLimit says %d requests remain", after.remaining)
	}
	// Reads have their own budget; another app has its own budget.
	_, err = cl.GetScore(ctx, a.ID)
	c.NoError(err, "a read after the write budget ran out")
	other := c.NewApp()
	_, err = c.AsApp(other.Key, xpromo.WithRetries(0)).PauseCampaign(ctx, missingLike(other.ID))
	c.ExpectError(err, http.StatusNotFound, "not_found", "another app's write after the first app's budget ran out")
}
