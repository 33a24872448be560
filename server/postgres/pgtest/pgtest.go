// Package pgtest gives tests a fresh PostgreSQL database each. It lives apart
// from package postgres so that the production package does not import
// "testing".
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
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

// NewTestDatabase creates an empty database (from template0) for the test,
// drops it (WITH (FORCE)) when the test ends, and returns its URL, which is
// the EnvURL one with the database name replaced. Register cleanups that must
// run before the drop (closing pools) after calling it.
func NewTestDatabase(t testing.TB) string {
	t.Helper()
	admin := AdminURL(t)
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := "xpromo_test_" + hex.EncodeToString(b[:])
	dbURL, err := WithDatabase(admin, name)
	if err != nil {
		t.Fatalf("pgtest: %s: %v", EnvURL, err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := adminExec(ctx, admin, `CREATE DATABASE `+pgx.Identifier{name}.Sanitize()+` TEMPLATE template0`); err != nil {
		t.Fatalf("pgtest: creating database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := adminExec(ctx, admin, `DROP DATABASE IF EXISTS `+pgx.Identifier{name}.Sanitize()+` WITH (FORCE)`); err != nil {
			t.Errorf("pgtest: dropping database %s: %v", name, err)
		}
	})
	return dbURL
}

func adminExec(ctx context.Context, url, stmt string) error {
	cfg, err := pgxpool.ParseConfig(url) // tolerates pool_* parameters
	if err != nil {
		return err
	}
	conn, err := pgx.ConnectConfig(ctx, cfg.ConnConfig)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, stmt)
	return err
}

// WithDatabase returns the connection string u (a URL or a keyword/value
// string) pointing at database name instead.
func WithDatabase(u, name string) (string, error) {
	if strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://") {
		parsed, err := url.Parse(u)
		if err != nil {
			return "", err
		}
		parsed.Path = "/" + name
		parsed.RawPath = ""
		return parsed.String(), nil
	}
	return u + " dbname=" + name, nil
}
