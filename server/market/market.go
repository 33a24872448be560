// Package market holds the rate card (categories and their floors) and
// campaigns.
package market

// Tx is what the market domain needs from a transaction.
type Tx interface{}

// Service is the market domain's entry point; its fields are its dependencies.
type Service struct{}
