// Package apps registers apps, issues and checks their API keys, keeps their
// status and its history, and records the jobs (scoring, vetting gate) queued
// for them.
package apps

// Tx is what the apps domain needs from a transaction.
type Tx interface{}

// Service is the apps domain's entry point; its fields are its dependencies.
type Service struct{}
