// Package storage names what the server needs from a database as a whole.
//
// Each domain package (ledger, apps, market, payments, idempotency,
// attribution, webhooks, jobs, scoring, testmode) declares the narrow Tx interface its
// functions need; Tx here is their union, which the sqlite and postgres
// stores implement with one transaction type. A
// domain function that moves money takes an interface embedding both its own
// Tx and ledger.Tx, so the state change and the ledger lines commit together.
//
// Domain services do not import this package (it imports them); they receive
// an Updater or Viewer for their own Tx type, made here by As.
package storage

import (
	"context"
	"fmt"
	"reflect"
	"time"

	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/complaints"
	"github.com/xpromo/xpromo/server/dashboard/session"
	"github.com/xpromo/xpromo/server/gate/contact"
	"github.com/xpromo/xpromo/server/gauges"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/jobs"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/lifecycle"
	"github.com/xpromo/xpromo/server/market"
	"github.com/xpromo/xpromo/server/payments"
	"github.com/xpromo/xpromo/server/retention"
	"github.com/xpromo/xpromo/server/scoring"
	"github.com/xpromo/xpromo/server/testmode"
	"github.com/xpromo/xpromo/server/webhooks"
)

// Tx is one transaction over every domain's tables.
type Tx interface {
	ledger.Tx
	apps.Tx
	complaints.Tx
	market.Tx
	payments.Tx
	idempotency.Tx
	attribution.Tx
	webhooks.Tx
	jobs.Tx
	scoring.Tx
	contact.Store
	lifecycle.Tx
	testmode.Tx
	retention.Tx
	session.Tx
	gauges.Tx
}

// Store is a database: SQLite or PostgreSQL.
type Store interface {
	ledger.Store
	// Update runs fn in a read-write transaction, retried on conflicts as
	// ledger.Store.InTx is (fn must have no side effects outside tx).
	Update(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// View runs fn in a read-only transaction: a consistent snapshot that
	// does not take the write lock. Writes through tx fail.
	View(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	// Snapshot runs fn with a ledger reader on one consistent snapshot.
	Snapshot(ctx context.Context, fn func(ledger.Reader) error) error
	Ping(ctx context.Context) error
	Close() error
}

// InstanceHolder is a store that can tell when a server instance holding
// idempotency claims died (idempotency.Tx.IdempotencyHolderAlive). Both
// stores are. HoldInstance marks this process as the live instance id until
// release is called or the process ends; the server calls it at start,
// before it serves, and records id on its claims (idempotency.Service.Holder).
type InstanceHolder interface {
	HoldInstance(ctx context.Context, id string) (release func() error, err error)
}

// Txer runs a function in a transaction of type T.
type Txer[T any] func(ctx context.Context, fn func(ctx context.Context, tx T) error) error

// Updater returns a Txer for a domain's own Tx interface T, running Update.
// T must be an interface that Tx implements.
func Updater[T any](s Store) Txer[T] { return adapt[T](s.Update) }

// Viewer returns a Txer for T running View.
func Viewer[T any](s Store) Txer[T] { return adapt[T](s.View) }

func adapt[T any](run func(context.Context, func(context.Context, Tx) error) error) Txer[T] {
	// Checked once, when the service is wired, rather than on every call.
	if t := reflect.TypeFor[T](); t.Kind() != reflect.Interface || !reflect.TypeFor[Tx]().Implements(t) {
		panic(fmt.Sprintf("storage: storage.Tx does not implement %v", t))
	}
	return func(ctx context.Context, fn func(context.Context, T) error) error {
		return run(ctx, func(ctx context.Context, tx Tx) error { return fn(ctx, any(tx).(T)) })
	}
}

// ContactStore is the contact challenge store (server/gate/contact) over s:
// each call runs in its own transaction (Update for the writes, View for
// the reads), as contact.Store's one-statement methods expect.
func ContactStore(s Store) contact.Store { return contactStore{s} }

type contactStore struct{ s Store }

func (c contactStore) InsertChallenge(ctx context.Context, ch contact.Challenge) error {
	return c.s.Update(ctx, func(ctx context.Context, tx Tx) error { return tx.InsertChallenge(ctx, ch) })
}

func (c contactStore) ChallengeByTokenHash(ctx context.Context, h []byte) (ch contact.Challenge, err error) {
	err = c.s.View(ctx, func(ctx context.Context, tx Tx) error {
		ch, err = tx.ChallengeByTokenHash(ctx, h)
		return err
	})
	return ch, err
}

func (c contactStore) LatestChallenge(ctx context.Context, subject string) (ch contact.Challenge, err error) {
	err = c.s.View(ctx, func(ctx context.Context, tx Tx) error {
		ch, err = tx.LatestChallenge(ctx, subject)
		return err
	})
	return ch, err
}

func (c contactStore) ChallengesSince(ctx context.Context, subject string, since time.Time) (ts []time.Time, err error) {
	err = c.s.View(ctx, func(ctx context.Context, tx Tx) error {
		ts, err = tx.ChallengesSince(ctx, subject, since)
		return err
	})
	return ts, err
}

func (c contactStore) ConsumeChallenge(ctx context.Context, id string, at time.Time) (won bool, err error) {
	err = c.s.Update(ctx, func(ctx context.Context, tx Tx) error {
		won, err = tx.ConsumeChallenge(ctx, id, at)
		return err
	})
	return won, err
}

func (c contactStore) AddCodeAttempt(ctx context.Context, id string) (n int, err error) {
	err = c.s.Update(ctx, func(ctx context.Context, tx Tx) error {
		n, err = tx.AddCodeAttempt(ctx, id)
		return err
	})
	return n, err
}
