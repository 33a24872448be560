package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/xpromo/xpromo/server/jsonbound"
)

// RateSource asks a rate endpoint for the EUR→USD rate that prices x402
// top-ups in USDC: GET URL answers 200 with a JSON object whose "rate" is
// a positive decimal, as a string ("1.0843") or a number (1.0843), the USD
// one EUR buys. An answer is kept for TTL (0: a minute), so a burst of
// challenges asks once.
type RateSource struct {
	URL  string
	HTTP *http.Client // the server's outbound client
	TTL  time.Duration
	Now  func() time.Time

	mu      sync.Mutex
	rate    *big.Rat
	fetched time.Time
}

// Rate returns the current rate, from the cache while it is fresh.
func (r *RateSource) Rate(ctx context.Context) (*big.Rat, error) {
	ttl := r.TTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.Now()
	if r.rate != nil && now.Sub(r.fetched) < ttl && !now.Before(r.fetched) {
		return r.rate, nil
	}
	rate, err := r.fetch(ctx)
	if err != nil {
		return nil, err
	}
	r.rate, r.fetched = rate, now
	return rate, nil
}

func (r *RateSource) fetch(ctx context.Context) (*big.Rat, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("x402: rate URL: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := r.HTTP.Do(req)
	if err != nil {
		return nil, fmt.Errorf("x402: rate endpoint: %w", err)
	}
	defer resp.Body.Close()
	raw, err := jsonbound.Read(resp.Body, MaxRateAnswerBytes, jsonbound.Answer)
	if err != nil {
		return nil, fmt.Errorf("x402: rate endpoint: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("x402: rate endpoint answered %s", resp.Status)
	}
	return parseRate(raw)
}

// parseRate reads a rate endpoint's 200 answer (raw, already within
// jsonbound.Answer).
func parseRate(raw []byte) (*big.Rat, error) {
	var body struct {
		Rate json.Number `json:"rate"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		// A string rate decodes into json.Number too; anything else does not.
		return nil, fmt.Errorf("x402: rate endpoint answered no {\"rate\": …} object")
	}
	if len(body.Rate) > maxRateChars || strings.ContainsAny(string(body.Rate), "eE") {
		return nil, fmt.Errorf("x402: rate endpoint answered rate %.40q, not a plain decimal of at most %d characters", body.Rate, maxRateChars)
	}
	rate, ok := new(big.Rat).SetString(body.Rate.String())
	if !ok || rate.Sign() <= 0 || rate.Cmp(big.NewRat(1000, 1)) > 0 {
		return nil, fmt.Errorf("x402: rate endpoint answered rate %q, not a positive decimal", body.Rate)
	}
	return rate, nil
}
