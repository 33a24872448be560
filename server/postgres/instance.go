package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server instances and the idempotency claims they hold. Each instance
// holds, for its life, a session-level advisory lock keyed on its instance
// id, on a connection of its own (HoldInstance). PostgreSQL releases a
// session's locks when the session ends, which it notices at once when the
// process dies (its socket closes). So a claim whose holder's lock is free
// was abandoned: IdempotencyHolderAlive tries the lock, shared and for the
// length of the transaction only, and finds out without waiting out the
// claim's lease. A holder on a host that vanished without closing its
// socket keeps its lock until PostgreSQL's TCP keepalive drops the session:
// its claims wait out their lease meanwhile.

// instanceCheckEvery is how often the lock's connection is checked, and the
// lock taken again when the connection was lost.
const instanceCheckEvery = 5 * time.Second

// instanceLockKey is the advisory lock key of an instance id.
func instanceLockKey(id string) int64 {
	sum := sha256.Sum256([]byte("xpromo server instance\x00" + id))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

// HoldInstance marks this process as the live instance id (the holder its
// idempotency claims record) until release is called or the process ends.
// If the lock's connection is lost, it is taken again within
// instanceCheckEvery; meanwhile other instances may take this instance's
// claims over, which costs work but never a double effect (a request's
// answer commits only while its claim is held: see package idempotency).
func (db *DB) HoldInstance(ctx context.Context, id string) (release func() error, err error) {
	if id == "" {
		return nil, errors.New("postgres: HoldInstance needs an instance id")
	}
	key := instanceLockKey(id)
	conn, err := db.lockInstance(ctx, key)
	if err != nil {
		return nil, err
	}
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(instanceCheckEvery)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				if conn != nil {
					// Unlocked before release returns (a closed session's
					// locks go a moment later), then the session ends.
					cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					_, _ = conn.Exec(cctx, "SELECT pg_advisory_unlock($1)", key)
					_ = conn.Close(cctx)
					cancel()
				}
				return
			case <-tick.C:
			}
			cctx, cancel := context.WithTimeout(context.Background(), instanceCheckEvery)
			if conn != nil && conn.Ping(cctx) != nil {
				_ = conn.Close(cctx)
				conn = nil
			}
			if conn == nil {
				conn, _ = db.lockInstance(cctx, key) // nil again: retried at the next tick
			}
			cancel()
		}
	}()
	return sync.OnceValue(func() error {
		close(stop)
		<-stopped
		return nil
	}), nil
}

// lockInstance takes a connection out of the pool for good and takes the
// instance's lock on it.
func (db *DB) lockInstance(ctx context.Context, key int64) (*pgx.Conn, error) {
	c, err := db.pool.Acquire(ctx)
	if err != nil {
		return nil, wrap(err, "acquiring the instance lock's connection")
	}
	conn := c.Hijack()
	var ok bool
	if err := conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", key).Scan(&ok); err != nil || !ok {
		_ = conn.Close(ctx)
		if err == nil {
			err = errors.New("postgres: another session holds this instance's lock")
		}
		return nil, wrap(err, "taking the instance lock")
	}
	return conn, nil
}
