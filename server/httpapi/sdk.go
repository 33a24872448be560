package httpapi

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ratelimit"
)

// TestClock is the server's clock as the admin clock endpoints use it
// (wire.Clock): advancing it is refused outside test mode.
type TestClock interface {
	Now() time.Time
	Offset() time.Duration
	TestMode() bool
	// Advance answers the new time and offset (a kept clock moves once the
	// request's unit of work has committed).
	Advance(ctx context.Context, d time.Duration) (now time.Time, offset time.Duration, err error)
	// Sync catches a kept clock up with the advances other instances of
	// its store made since (GET /v1/admin/clock asks it first).
	Sync(ctx context.Context) error
}

// FillPolicy is the per-app budget of POST /v1/sdk/fill, on top of the
// per-IP write limit every public POST has: a publisher's installed base
// shares it, so it is generous. Only fills whose signature verified spend
// it.
var FillPolicy = ratelimit.Policy{Name: "sdk_fill", Limit: 6000, Window: time.Minute}

// mountSDK: SDK key registration, the SDK endpoints under /v1/sdk/, chains,
// and the operators' test clock and sweep.
func (s *Server) mountSDK(public, protected, admin chi.Router) {
	protected.Post("/apps/{app_id}/sdk-keys", s.registerSDKKey)
	protected.Get("/apps/{app_id}/sdk-keys", s.listSDKKeys)
	protected.Post("/apps/{app_id}/sdk-keys/{key_id}/revoke", s.revokeSDKKey)
	protected.Get("/chains/{chain_id}", s.getChain)

	public.Post("/sdk/fill", s.sdkFill)
	public.Post("/sdk/click", s.sdkClick)
	public.Post("/sdk/install", s.sdkInstall)
	public.Post("/sdk/heartbeat", s.sdkHeartbeat)

	admin.Get("/admin/clock", s.getClock)
	admin.Post("/admin/clock/advance", s.advanceClock)
	admin.Post("/admin/attribution/sweep", s.sweep)
}

// realIP replaces the request's RemoteAddr with the client's address from
// X-Forwarded-For when, and only when, the connection comes from a
// configured trusted proxy: the rightmost address that is not itself a
// trusted proxy (the one the outermost trusted proxy saw). Everything after
// it (rate limits, the fraud rules) then sees the client. Without trusted
// proxies the header is ignored: any client can send it.
func (s *Server) realIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(s.services.TrustedProxies) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		peer, port := peerAddr(r.RemoteAddr)
		if !peer.IsValid() || !s.trusted(peer) {
			next.ServeHTTP(w, r)
			return
		}
		client := peer
		hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
		for i := len(hops) - 1; i >= 0; i-- {
			a, err := netip.ParseAddr(strings.TrimSpace(hops[i]))
			if err != nil {
				break // a garbled hop: trust nothing further left
			}
			client = a.Unmap()
			if !s.trusted(client) {
				break
			}
		}
		// A shallow copy: only RemoteAddr changes (Clone would copy the
		// headers too, on every request).
		r2 := r.WithContext(r.Context())
		r2.RemoteAddr = net.JoinHostPort(client.String(), port)
		next.ServeHTTP(w, r2)
	})
}

func (s *Server) trusted(a netip.Addr) bool {
	for _, p := range s.services.TrustedProxies {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr parses RemoteAddr ("host:port").
func peerAddr(remote string) (netip.Addr, string) {
	host, port, err := net.SplitHostPort(remote)
	if err != nil {
		host, port = remote, "0"
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}, port
	}
	return a.Unmap().WithZone(""), port
}

// sdkClientAddr is the client's address as the fraud rules see it (after
// realIP).
func sdkClientAddr(r *http.Request) netip.Addr {
	a, _ := peerAddr(r.RemoteAddr)
	return a
}

func (s *Server) registerSDKKey(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	var body struct {
		PublicKey *string `json:"public_key"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if body.PublicKey == nil {
		s.writeErr(w, r, missing("public_key"))
		return
	}
	k, created, err := s.services.Attribution.RegisterSDKKey(r.Context(), appID, *body.PublicKey)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	writeJSON(w, status, attribution.WireKey(k))
}

func (s *Server) listSDKKeys(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	keys, err := s.services.Attribution.SDKKeys(r.Context(), appID)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	out := xpromo.SDKKeyList{Keys: make([]xpromo.SDKKey, len(keys))}
	for i, k := range keys {
		out.Keys[i] = attribution.WireKey(k)
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) revokeSDKKey(w http.ResponseWriter, r *http.Request) {
	appID, err := ownApp(r, chi.URLParam(r, "app_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	k, err := s.services.Attribution.RevokeSDKKey(r.Context(), appID, chi.URLParam(r, "key_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, attribution.WireKey(k))
}

func (s *Server) getChain(w http.ResponseWriter, r *http.Request) {
	c, err := s.services.Attribution.Chain(r.Context(), callerApp(r.Context()), chi.URLParam(r, "chain_id"))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, attribution.Wire(c))
}

// fillBody is xpromo.FillRequest with pointers for the required fields.
type fillBody struct {
	AppID     *string `json:"app_id"`
	Slot      *string `json:"slot"`
	Platform  *string `json:"platform"`
	DeviceID  string  `json:"device_id"`
	Locale    string  `json:"locale"`
	Signature *string `json:"signature"`
}

// allowApp applies an extra per-app budget (policy) to an SDK request; the
// answer is 429 rate_limited like the other limits. A limiter failure lets
// the request through, as the per-IP limit does.
func (s *Server) allowApp(ctx context.Context, appID string, p ratelimit.Policy) error {
	if s.services.Limiter == nil {
		return nil
	}
	d, err := s.services.Limiter.Allow(ctx, "sdkapp:"+appID, p)
	if err != nil || d.Allowed {
		return nil
	}
	at := s.Now().Add(d.Reset).Truncate(time.Second).Add(time.Second)
	e := apperr.New(apperr.RateLimited, "this app's SDK fills reached %d per %d seconds; retry after the window resets", p.Limit, ceilSeconds(p.Window))
	e.RetryAfter = &at
	return e
}

func (s *Server) sdkFill(w http.ResponseWriter, r *http.Request) {
	var body fillBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	var err error
	switch {
	case body.AppID == nil || *body.AppID == "":
		err = missing("app_id")
	case body.Slot == nil:
		err = missing("slot")
	case body.Platform == nil:
		err = missing("platform")
	case body.Signature == nil || *body.Signature == "":
		err = missing("signature")
	}
	var v attribution.VerifiedFill
	if err == nil {
		v, err = s.services.Attribution.VerifyFill(r.Context(), attribution.FillParams{
			PublisherAppID: *body.AppID, Slot: xpromo.Slot(*body.Slot), Platform: xpromo.Platform(*body.Platform),
			DeviceID: body.DeviceID, Locale: body.Locale, Signature: *body.Signature,
		})
	}
	if err == nil {
		// Only the app's own SDK spends its fill budget: the signature
		// verified first.
		err = s.allowApp(r.Context(), v.AppID(), FillPolicy)
	}
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	f, reason, err := s.services.Attribution.Fill(r.Context(), v)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	if reason != "" {
		writeJSON(w, http.StatusOK, xpromo.FillResponse{NoFillReason: &reason})
		return
	}
	expires := f.Offer.Expires()
	creative := f.Creative
	writeJSON(w, http.StatusOK, xpromo.FillResponse{Filled: true, Creative: &creative, Offer: &f.Offer, ExpiresAt: &expires})
}

func (s *Server) sdkClick(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token *string `json:"token"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if body.Token == nil || *body.Token == "" {
		s.writeErr(w, r, missing("token"))
		return
	}
	c, _, err := s.services.Attribution.Click(r.Context(), *body.Token, sdkClientAddr(r))
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.ClickResponse{ChainID: c.ID, ExpiresAt: c.ExpiresAt})
}

func (s *Server) sdkInstall(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token            *string `json:"token"`
		Countersignature *string `json:"countersignature"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	switch {
	case body.Token == nil || *body.Token == "":
		s.writeErr(w, r, missing("token"))
		return
	case body.Countersignature == nil || *body.Countersignature == "":
		s.writeErr(w, r, missing("countersignature"))
		return
	}
	c, _, err := s.services.Attribution.Install(r.Context(), attribution.Claim{
		Token: *body.Token, Countersignature: *body.Countersignature, IP: sdkClientAddr(r),
	})
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.InstallResponse{ChainID: c.ID, State: xpromo.ChainState(c.State)})
}

func (s *Server) sdkHeartbeat(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Heartbeat *string `json:"heartbeat"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if body.Heartbeat == nil || *body.Heartbeat == "" {
		s.writeErr(w, r, missing("heartbeat"))
		return
	}
	c, err := s.services.Attribution.Heartbeat(r.Context(), *body.Heartbeat)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.HeartbeatResponse{ChainID: c.ID, State: xpromo.ChainState(c.State)})
}

func (s *Server) clockState() xpromo.ClockState {
	c := s.services.Clock
	return xpromo.ClockState{Now: c.Now().UTC(), OffsetSeconds: int64(c.Offset() / time.Second), TestMode: c.TestMode()}
}

func (s *Server) getClock(w http.ResponseWriter, r *http.Request) {
	if err := s.services.Clock.Sync(r.Context()); err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.clockState())
}

func (s *Server) advanceClock(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Seconds *int64 `json:"seconds"`
	}
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeErr(w, r, err)
		return
	}
	if body.Seconds == nil {
		s.writeErr(w, r, missing("seconds"))
		return
	}
	secs := *body.Seconds
	d := time.Duration(secs) * time.Second
	if secs < 0 || secs > int64(time.Duration(1<<62)/time.Second) {
		d = -1 // refused by Advance, without overflowing
	}
	now, offset, err := s.services.Clock.Advance(r.Context(), d)
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.ClockState{Now: now.UTC(), OffsetSeconds: int64(offset / time.Second), TestMode: true})
}

// sweep runs the clearing sweep now (the server also runs it every few
// seconds): after advancing the test clock, a client need not wait.
func (s *Server) sweep(w http.ResponseWriter, r *http.Request) {
	res, err := s.services.Attribution.Sweep(r.Context())
	if err != nil {
		s.writeErr(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, xpromo.SweepResult{Cleared: res.Cleared, Refunded: res.Refunded, Failed: res.Failed})
}
