package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
)

// One server process owns the database file: HoldInstance locks it for the
// process's life. Every idempotency claim it did not make was then made by
// a server that is gone (its process ended, killed or not, which released
// the lock), so IdempotencyHolderAlive knows at once that such a claim was
// abandoned, without waiting out its lease.

// owner is the instance holding the file, and the lock that proves it.
type owner struct {
	mu   sync.Mutex
	id   string
	file *os.File
}

func (db *DB) ownerID() string {
	db.owner.mu.Lock()
	defer db.owner.mu.Unlock()
	return db.owner.id
}

// ErrInUse means another process holds the database file (HoldInstance).
var ErrInUse = errors.New("sqlite: another server process holds this database file")

// HoldInstance makes this process the one server of the database file, as
// instance id (the holder its idempotency claims record), until release is
// called or the process ends. It takes an exclusive lock on <path>.lock
// (flock, Unix only): a second server on the same file fails with ErrInUse.
// Readers that do not serve (`ledger verify`) do not take it.
func (db *DB) HoldInstance(ctx context.Context, id string) (release func() error, err error) {
	if id == "" {
		return nil, errors.New("sqlite: HoldInstance needs an instance id")
	}
	db.owner.mu.Lock()
	defer db.owner.mu.Unlock()
	if db.owner.file != nil {
		return nil, fmt.Errorf("%w (instance %s of this process)", ErrInUse, db.owner.id)
	}
	f, err := lockFile(db.path + ".lock")
	if err != nil {
		return nil, err
	}
	db.owner.id, db.owner.file = id, f
	return sync.OnceValue(func() error {
		db.owner.mu.Lock()
		defer db.owner.mu.Unlock()
		db.owner.id, db.owner.file = "", nil
		return f.Close() // closing the file releases the lock
	}), nil
}
