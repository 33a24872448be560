// Package pgtest gives tests a fresh PostgreSQL database each. It lives apart
// from package postgres so that the production package does not import
// "testing".
package pgtest

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/xpromo/xpromo/server/postgres"
)

// EnvURL names the variable holding the URL of a database the tests may
// connect to as a user allowed to CREATE DATABASE (make test sets it).
const EnvURL = "XPROMO_TEST_DATABASE_URL"

// AdminURL returns the URL in EnvURL, skipping the test when it is unset.
func AdminURL(t testing.TB) string {
	t.Helper()
	u := os.Getenv(EnvURL)
	if u == "" {
		t.Skip(EnvURL + " not set: PostgreSQL store tests skipped (make test sets it)")
	}
	return u
}

// NewTestDatabase creates an empty database for the test, drops it when the
// test ends, and returns its URL, which is the EnvURL one with the database
// name replaced. Register cleanups that must run before the drop (closing
// pools) after calling it.
func NewTestDatabase(t testing.TB) string {
	t.Helper()
	return NewDatabase(t, AdminURL(t), "xpromo_test_")
}

// NewDatabase is NewTestDatabase on the server of adminURL, with the given
// name prefix.
func NewDatabase(t testing.TB, adminURL, prefix string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL, drop, err := postgres.ScratchDatabase(ctx, adminURL, prefix)
	if err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := drop(ctx); err != nil {
			t.Errorf("pgtest: %v", err)
		}
	})
	return dbURL
}
