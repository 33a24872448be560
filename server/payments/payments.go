// Package payments moves money in and out: top-ups through a payment
// provider's checkout, and payouts by transfer.
package payments

// Tx is what the payments domain needs from a transaction.
type Tx interface{}

// Service is the payments domain's entry point; its fields are its dependencies.
type Service struct{}
