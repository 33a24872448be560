package crashtest

import (
	"errors"
	"flag"
	"time"
)

// LoadFlags are the command-line flags of the money load, shared by
// xpromo-crashtest and xpromo-failovertest (one set, one meaning).
type LoadFlags struct {
	Workers, Claims, TopUps, Adjustments int
	RetryFor                             time.Duration
	Verbose                              bool
}

// Register adds the load's flags to fs; retryFor and retryHelp are the
// -retry-for default and help, which differ (a restart against a
// failover).
func (l *LoadFlags) Register(fs *flag.FlagSet, retryFor time.Duration, retryHelp string) {
	fs.IntVar(&l.Workers, "workers", 6, "operations sent at once")
	fs.IntVar(&l.Claims, "claims", 10, "install claims per cycle")
	fs.IntVar(&l.TopUps, "topups", 3, "top-ups per cycle")
	fs.IntVar(&l.Adjustments, "adjustments", 10, "adjustments per cycle")
	fs.DurationVar(&l.RetryFor, "retry-for", retryFor, retryHelp)
	fs.BoolVar(&l.Verbose, "v", false, "print every problem found, not just the first few")
}

// Check is the flags' usage error, if any.
func (l *LoadFlags) Check() error {
	if l.Workers < 1 || l.Claims < 0 || l.TopUps < 0 || l.Adjustments < 0 || l.RetryFor <= 0 {
		return errors.New("-claims, -topups and -adjustments must not be negative, -workers and -retry-for must be positive")
	}
	return nil
}
