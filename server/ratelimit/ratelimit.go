// Package ratelimit counts requests per bucket (an API key, or an IP on
// public endpoints) in fixed windows, in memory or in Redis so that limits
// hold across server instances.
//
// A window opens with a bucket's first request and lasts Policy.Window; the
// first Policy.Limit requests in it are allowed and the rest refused until it
// closes. Refused requests do not count. Windows are anchored per bucket, not
// to the wall clock, so buckets do not all reset at the same instant.
package ratelimit

import (
	"context"
	"fmt"
	"time"
)

// Policy is a quota: Limit requests per Window. Name identifies it in the
// RateLimit headers and separates its counters from other policies' for the
// same bucket.
type Policy struct {
	Name   string // "read" or "write"
	Limit  int
	Window time.Duration
}

// Defaults (per API key or IP, per minute).
const (
	DefaultReadLimit  = 600
	DefaultWriteLimit = 60
)

// Read returns the read policy: limit requests per minute (DefaultReadLimit
// when limit is 0).
func Read(limit int) Policy {
	if limit == 0 {
		limit = DefaultReadLimit
	}
	return Policy{Name: "read", Limit: limit, Window: time.Minute}
}

// Write returns the write policy: limit requests per minute
// (DefaultWriteLimit when limit is 0).
func Write(limit int) Policy {
	if limit == 0 {
		limit = DefaultWriteLimit
	}
	return Policy{Name: "write", Limit: limit, Window: time.Minute}
}

// Validate reports a policy that cannot be enforced.
func (p Policy) Validate() error {
	if p.Name == "" || p.Limit < 0 || p.Window < time.Millisecond {
		return fmt.Errorf("ratelimit: invalid policy %+v: needs a name, a limit ≥ 0 and a window ≥ 1ms", p)
	}
	return nil
}

// Decision is the outcome of one request against a policy.
type Decision struct {
	Allowed   bool
	Limit     int           // the policy's limit
	Remaining int           // requests left in the window after this one
	Reset     time.Duration // until the window closes
}

// Limiter decides whether a request in bucket may proceed under p, counting
// it when it may.
type Limiter interface {
	Allow(ctx context.Context, bucket string, p Policy) (Decision, error)
}
