package slots

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// ErrNoChain is returned by Heartbeat when this install has no chain that
// wants heartbeats: it was not attributed, its claim was refused, or the
// chain moved on (activated, cleared, refunded, rejected).
var ErrNoChain = errors.New("slots: this install has no chain to send heartbeats for")

// Install returns what the SDK knows about this install's attribution.
func (a *Agent) Install() InstallState {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.install
}

// installKey is the idempotency key of an install claim: derived from the
// click token, so the claim queued again after a crash is the same request.
func installKey(tokenHash string) string { return "install_" + tokenHash }

// ClaimInstall runs on the advertised app's launch. On the first launch
// it looks for the click token through the handoff channels (inbox, the
// installed app's download provenance, the Downloads folder), and when it
// finds one, countersigns it with the app's SDK key (token hash, device
// id, claim time, app id), remembers the claim in the data directory,
// queues POST /v1/sdk/install (attempted at once) and consumes the inbox
// entry. Later launches return the remembered state without looking
// again. An install with no token is organic: the returned state has
// Claimed false, and nothing is sent.
func (a *Agent) ClaimInstall(ctx context.Context) (InstallState, error) {
	a.claimMu.Lock()
	defer a.claimMu.Unlock()
	a.mu.Lock()
	if !a.install.CheckedAt.IsZero() {
		s := a.install
		a.mu.Unlock()
		if s.Claimed && !s.Answered {
			a.flushSoon(ctx)
			return a.Install(), nil
		}
		return s, nil
	}
	a.mu.Unlock()

	found, err := a.handoff.Find(ctx, a.cfg.InstalledPath)
	if err != nil && !errors.Is(err, ErrNoHandoff) {
		return InstallState{}, err
	}
	now := a.now()
	s := InstallState{CheckedAt: now.UTC()}
	if err == nil {
		cs, err := attribution.Countersign(a.cfg.Key.Private, a.cfg.Key.ID, found.Token, a.deviceID, now, a.cfg.AppID)
		if err != nil {
			return InstallState{}, err
		}
		s.Claimed, s.Channel, s.Token, s.Countersignature = true, found.Channel, found.Token, cs
		s.TokenHash, s.ClaimedAt = attribution.TokenHashString(found.Token), now.UTC()
	}
	// Remember first, then queue: a crash in between is repaired by New
	// (requeueInstall), with the same body and key.
	a.mu.Lock()
	if err := saveInstallState(a.cfg.DataDir, s); err != nil {
		a.mu.Unlock()
		return InstallState{}, err
	}
	a.install = s
	a.mu.Unlock()
	if !s.Claimed {
		return s, nil
	}
	if err := a.requeueInstall(); err != nil {
		return s, err
	}
	if found.Channel == ChannelInbox {
		if err := a.handoff.Inbox.Consume(a.cfg.AppID, found.Token); err != nil {
			a.log.Warn("xpromo: inbox entry not removed", "error", err)
		}
	}
	a.flushSoon(ctx)
	return a.Install(), nil
}

// requeueInstall queues the remembered install claim unless it was
// answered or is already queued.
func (a *Agent) requeueInstall() error {
	s := a.Install()
	if !s.Claimed || s.Answered {
		return nil
	}
	key := installKey(s.TokenHash)
	for _, e := range a.queue.Pending() {
		if e.IdempotencyKey == key {
			return nil
		}
	}
	_, err := a.queue.EnqueueWithKey(EventInstall, pathInstall, key,
		xpromo.InstallRequest{Token: s.Token, Countersignature: s.Countersignature})
	return err
}

// recordInstallAnswer stores the server's answer to the install claim.
func (a *Agent) recordInstallAnswer(e Event, resp json.RawMessage, sendErr error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.install
	if !s.Claimed || e.IdempotencyKey != installKey(s.TokenHash) {
		return // an older claim's event; nothing to record
	}
	s.Answered = true
	if sendErr != nil {
		// A refusal is final (403 with a fraud code,
		// e.g. fraud_token_expired after a long time offline); the install
		// is not attributed, and the SDK does not try again.
		s.Refusal = xpromo.ErrorCode(sendErr)
		if s.Refusal == "" {
			s.Refusal = "refused"
		}
		a.log.Warn("xpromo: install claim refused", "code", s.Refusal, "error", sendErr)
	} else {
		var r xpromo.InstallResponse
		if err := json.Unmarshal(resp, &r); err != nil {
			a.log.Warn("xpromo: install answer unreadable", "error", err)
		}
		s.ChainID, s.State = r.ChainID, r.State
	}
	a.saveLocked(s)
}

func (a *Agent) saveLocked(s InstallState) {
	if err := saveInstallState(a.cfg.DataDir, s); err != nil {
		a.log.Warn("xpromo: install state not saved", "error", err)
	}
	a.install = s
}

// heartbeatIntent is the queued body of a heartbeat event: which chain.
// The heartbeat itself is signed when it is sent, since the server
// refuses stale ones.
type heartbeatIntent struct {
	TokenHash string `json:"th"`
}

// Heartbeat tells the server the app is in use: call it at launch and then
// every hour while the app runs (Run sends one every HeartbeatEvery, an
// hour by default). The first heartbeat
// received 48 to 72 hours after the install activates the chain. It queues
// a heartbeat (one at a time: a pending one is not doubled) and attempts
// delivery at once; offline, it is sent when the network is back, signed
// then. ErrNoChain means there is nothing to send for.
func (a *Agent) Heartbeat(ctx context.Context) error {
	a.hbMu.Lock()
	defer a.hbMu.Unlock()
	s := a.Install()
	if !s.Active() {
		return ErrNoChain
	}
	pending := false
	for _, e := range a.queue.Pending() {
		pending = pending || e.Kind == EventHeartbeat
	}
	if !pending {
		if _, err := a.queue.Enqueue(EventHeartbeat, pathHeartbeat, heartbeatIntent{TokenHash: s.TokenHash}); err != nil {
			return err
		}
	}
	a.flushSoon(ctx)
	return nil
}

// signHeartbeat turns a queued heartbeat intent into a freshly signed
// request: the next seq (saved before sending, so numbers only grow) and
// ts = now. Each attempt is a new message, so it gets its own
// idempotency key.
func (a *Agent) signHeartbeat(e Event) (xpromo.HeartbeatRequest, string, error) {
	var in heartbeatIntent
	if err := json.Unmarshal(e.Body, &in); err != nil {
		return xpromo.HeartbeatRequest{}, "", Permanent(fmt.Errorf("slots: heartbeat event: %w", err))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.install
	if !s.Active() || s.TokenHash != in.TokenHash {
		return xpromo.HeartbeatRequest{}, "", Permanent(ErrNoChain)
	}
	now := a.now()
	s.HeartbeatSeq++
	hb, err := attribution.SignHeartbeat(a.cfg.Key.Private, a.cfg.Key.ID, attribution.HeartbeatClaims{
		AppID: a.cfg.AppID, DeviceID: a.deviceID, TokenHash: s.TokenHash, Seq: s.HeartbeatSeq, SentAt: now.Unix(),
	})
	if err != nil {
		return xpromo.HeartbeatRequest{}, "", Permanent(err)
	}
	if err := saveInstallState(a.cfg.DataDir, s); err != nil {
		return xpromo.HeartbeatRequest{}, "", err // retried later; the seq was not used
	}
	a.install = s
	return xpromo.HeartbeatRequest{Heartbeat: hb}, fmt.Sprintf("%s_%d", e.IdempotencyKey, s.HeartbeatSeq), nil
}

// recordHeartbeatAnswer stores the chain state a heartbeat answer carries.
func (a *Agent) recordHeartbeatAnswer(resp json.RawMessage, sendErr error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.install
	if sendErr != nil {
		if errors.Is(sendErr, ErrNoChain) {
			return
		}
		a.log.Warn("xpromo: heartbeat refused", "code", xpromo.ErrorCode(sendErr), "error", sendErr)
		if xpromo.IsCode(sendErr, xpromo.CodeNotFound) {
			// The server has no install of this app on this device for the
			// token: there is no chain to keep alive.
			s.Refusal = xpromo.CodeNotFound
			a.saveLocked(s)
		}
		return
	}
	var r xpromo.HeartbeatResponse
	if err := json.Unmarshal(resp, &r); err != nil || !r.State.Valid() {
		a.log.Warn("xpromo: heartbeat answer unreadable", "error", err)
		return
	}
	s.Answered = true // a heartbeat answer implies the claim was accepted
	s.ChainID, s.State, s.LastHeartbeatAt = r.ChainID, r.State, a.now().UTC()
	a.saveLocked(s)
}
