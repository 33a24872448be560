// Package idempotency makes POST requests safe to retry: a request repeated
// with the same Idempotency-Key replays the first response.
package idempotency

// Tx is what idempotency needs from a transaction.
type Tx interface{}

// Service is the idempotency domain's entry point; its fields are its dependencies.
type Service struct{}
