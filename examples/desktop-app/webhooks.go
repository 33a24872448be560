package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Webhooks in the story (--webhook-url): each app registers an endpoint at
// a receiver on this machine (examples/webhook-receiver, which `make demo`
// starts), hands it the endpoint's secret through the receiver's secrets
// file, and after each step of the chain the story waits until the
// receiver has verified and printed the webhook of that step, for both
// apps. The receiver's output (--webhook-log) is the evidence: the checks
// read it.

// webhookTimeout bounds the wait for one webhook (the server delivers as
// soon as its worker dispatches the event: within a second or so).
const webhookTimeout = 30 * time.Second

// received is one event as the receiver printed it.
type received struct {
	ID    string
	Event xpromo.Event
	Chain xpromo.ChainEventData // for chain.* events
}

// hooks follows the receiver's output.
type hooks struct {
	url, secretsFile, log string
	n                     narrator
	endpoints             map[string]string // app id → endpoint id
}

// register creates an endpoint for each app, receiving every event type,
// and appends its secret to the receiver's secrets file.
func (h *hooks) register(ctx context.Context, apps ...*app) error {
	h.endpoints = map[string]string{}
	for _, a := range apps {
		ep, err := a.client.CreateWebhookEndpoint(ctx, a.ID, &xpromo.CreateWebhookEndpointRequest{
			URL: h.url, Events: xpromo.EventTypes, Description: "desktop-app demo: " + a.Name,
		})
		if err != nil {
			return fmt.Errorf("registering %s's webhook endpoint at %s (POST /v1/apps/%s/webhook-endpoints): %w", a.Name, h.url, a.ID, err)
		}
		h.endpoints[a.ID] = ep.ID
		if err := appendLine(h.secretsFile, ep.Secret); err != nil {
			return fmt.Errorf("handing %s's webhook secret to the receiver: %w", a.Name, err)
		}
		h.n.say(a.Role, "webhook endpoint %s: every event of %s, POSTed to %s (secret %s… handed to the receiver)", ep.ID, a.Name, h.url, prefix(ep.Secret, 10))
	}
	return nil
}

// appendLine appends s and a newline to the file at path (0600).
func appendLine(path, s string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(s + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// read returns every event the receiver printed so far, in its order.
func (h *hooks) read() ([]received, error) {
	raw, err := os.ReadFile(h.log)
	if err != nil {
		return nil, err
	}
	var out []received
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		id, body, ok := strings.Cut(sc.Text(), " ")
		if !ok || !strings.HasPrefix(body, "{") {
			continue // not an event line
		}
		r := received{ID: id}
		if err := json.Unmarshal([]byte(body), &r.Event); err != nil {
			return nil, fmt.Errorf("the receiver printed an event that is not JSON: %w", err)
		}
		if strings.HasPrefix(string(r.Event.Type), "chain.") {
			if err := json.Unmarshal(r.Event.Data, &r.Chain); err != nil {
				return nil, fmt.Errorf("%s %s: %w", r.Event.Type, r.ID, err)
			}
		}
		out = append(out, r)
	}
	return out, sc.Err()
}

// ofChain returns, per app, the chain.* events of the chain the receiver
// printed, in its order.
func ofChain(evs []received, chainID string) map[string][]received {
	out := map[string][]received{}
	for _, r := range evs {
		if r.Chain.Chain.ChainID == chainID {
			out[r.Event.AppID] = append(out[r.Event.AppID], r)
		}
	}
	return out
}

// await waits until the receiver printed, for every app, the
// chain.state_changed of the chain entering state (and, for cleared,
// chain.cleared), and narrates it.
func (h *hooks) await(ctx context.Context, chainID string, state xpromo.ChainState) error {
	ctx, cancel := context.WithTimeout(ctx, webhookTimeout)
	defer cancel()
	want := []xpromo.EventType{xpromo.EventChainStateChanged}
	if state == xpromo.ChainCleared {
		want = append(want, xpromo.EventChainCleared)
	}
	for {
		evs, err := h.read()
		if err != nil {
			return err
		}
		byApp := ofChain(evs, chainID)
		done := true
		for app := range h.endpoints {
			for _, typ := range want {
				if !slices.ContainsFunc(byApp[app], func(r received) bool { return r.Event.Type == typ && r.Chain.Chain.State == state }) {
					done = false
				}
			}
		}
		if done {
			names := make([]string, len(want))
			for i, t := range want {
				names[i] = string(t)
			}
			h.n.say("webhooks", "%s (%s) → both apps' endpoints: signature verified and printed by the receiver", strings.Join(names, " + "), state)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the receiver did not print the webhooks of chain %s becoming %s within %s (see its output, %s)", chainID, state, webhookTimeout, h.log)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkWebhooks: each app's receiver printed the chain's webhooks once
// each, in the order they happened: installed, activated_48h, then cleared
// with chain.cleared (those two happen in one instant, in either order).
func checkWebhooks(o *outcome) error {
	if o.Webhooks == nil {
		return nil
	}
	byApp := ofChain(o.Webhooks, o.Chain.ChainID)
	for _, a := range []*app{o.Publisher, o.Advertiser} {
		var got []string
		for _, r := range byApp[a.ID] {
			got = append(got, string(r.Event.Type)+"("+string(r.Chain.Chain.State)+")")
		}
		want := []string{"chain.state_changed(installed)", "chain.state_changed(activated_48h)", "chain.state_changed(cleared)", "chain.cleared(cleared)"}
		swapped := []string{want[0], want[1], want[3], want[2]}
		if !slices.Equal(got, want) && !slices.Equal(got, swapped) {
			return fmt.Errorf("%s's receiver printed %v, want %v", a.Name, got, want)
		}
	}
	return nil
}

// webhookSummary says what a received event is about.
func webhookSummary(r received) string {
	if r.Chain.Chain.ChainID != "" {
		prev := "new"
		if r.Chain.PreviousState != nil {
			prev = string(*r.Chain.PreviousState)
		}
		return fmt.Sprintf("chain %s: %s → %s", r.Chain.Chain.ChainID, prev, r.Chain.Chain.State)
	}
	if r.Event.Type == xpromo.EventScoreUpdated {
		var d xpromo.ScoreEventData
		if json.Unmarshal(r.Event.Data, &d) == nil {
			return "status " + string(d.Score.Status)
		}
	}
	return string(r.Event.Data)
}
