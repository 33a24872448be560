package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// ScratchDatabase creates an empty database (from template0) named prefix
// plus a random suffix on the server of adminURL, whose user may CREATE
// DATABASE, and returns its connection string and a function that drops it
// (WITH (FORCE), so open connections do not keep it). Tests, the crash test
// and the conformance suite's reference server each get a database of their
// own this way.
func ScratchDatabase(ctx context.Context, adminURL, prefix string) (dbURL string, drop func(context.Context) error, err error) {
	var b [8]byte
	_, _ = rand.Read(b[:])
	name := prefix + hex.EncodeToString(b[:])
	if dbURL, err = WithDatabase(adminURL, name); err != nil {
		return "", nil, fmt.Errorf("postgres: the admin URL: %w", err)
	}
	ident := pgx.Identifier{name}.Sanitize()
	if err := adminExec(ctx, adminURL, "CREATE DATABASE "+ident+" TEMPLATE template0"); err != nil {
		return "", nil, fmt.Errorf("postgres: creating database %s: %w", name, err)
	}
	drop = func(ctx context.Context) error {
		if err := adminExec(ctx, adminURL, "DROP DATABASE IF EXISTS "+ident+" WITH (FORCE)"); err != nil {
			return fmt.Errorf("postgres: dropping database %s: %w", name, err)
		}
		return nil
	}
	return dbURL, drop, nil
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
