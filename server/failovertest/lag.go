package failovertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// catchUpLimit bounds the wait for every replica to replay the primary's
// WAL (after a fault, a rewound or frozen node may be far behind on this
// small machine): generous, it is a bound, not an expectation.
const catchUpLimit = 3 * time.Minute

// NodeLag is how far one replica was behind the primary's WAL position
// when the harness asked, and how long it took to replay up to it.
type NodeLag struct {
	Node   string
	Bytes  int64         // pg_wal_lsn_diff(primary's current, replica's replayed) at the first look
	Waited time.Duration // until it had replayed that far
}

func (l NodeLag) String() string {
	return fmt.Sprintf("%s %d B, %.1f s", l.Node, l.Bytes, l.Waited.Seconds())
}

func lagsString(ls []NodeLag) string {
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = l.String()
	}
	return strings.Join(parts, "; ")
}

// caughtUp takes the leader's pg_current_wal_lsn() and waits until every
// other node's pg_last_wal_replay_lsn() has reached it, within the
// deadline; it returns each replica's lag. The leader is asked through
// Patroni (a node that is not the leader answers no current WAL position
// of its own).
func (c *Cluster) caughtUp(ctx context.Context, deadline time.Time) (string, []NodeLag, error) {
	var leader *Node
	var target string
	if err := waitFor(ctx, time.Until(deadline), "the leader's WAL position", func() error {
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		leader = nil
		for _, m := range ms {
			if m.Role == "leader" && m.State == "running" {
				leader = c.node(m.Name)
			}
		}
		if leader == nil {
			return fmt.Errorf("no running leader: %s", describe(ms))
		}
		return c.queryRow(ctx, leader.URL("postgres"), `SELECT pg_current_wal_lsn()::text`, nil, &target)
	}); err != nil {
		return "", nil, err
	}
	var lags []NodeLag
	for _, n := range c.Nodes {
		if n == leader {
			continue
		}
		l := NodeLag{Node: n.Name, Bytes: -1}
		start := time.Now()
		err := waitFor(ctx, time.Until(deadline), fmt.Sprintf("%s to replay the leader's WAL up to %s", n.Name, target), func() error {
			var behind *int64
			if err := c.queryRow(ctx, n.URL("postgres"), `SELECT pg_wal_lsn_diff($1::pg_lsn, pg_last_wal_replay_lsn())::bigint`, []any{target}, &behind); err != nil {
				return err
			}
			if behind == nil {
				return errors.New("replays nothing (pg_last_wal_replay_lsn() is null: not a standby)")
			}
			if l.Bytes < 0 {
				l.Bytes = max(0, *behind)
			}
			if *behind > 0 {
				return fmt.Errorf("%d bytes behind", *behind)
			}
			return nil
		})
		l.Waited = time.Since(start)
		lags = append(lags, l)
		if err != nil {
			return leader.Name, lags, err
		}
	}
	return leader.Name, lags, nil
}

// queryRow runs one query on url and scans its row.
func (c *Cluster) queryRow(ctx context.Context, url, sql string, args []any, dest ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	return conn.QueryRow(ctx, sql, args...).Scan(dest...)
}
