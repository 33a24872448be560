package ledger

import (
	"context"
	"errors"
	"time"
)

// Store is what the ledger needs from a database. The sqlite and postgres
// packages implement it; storetest checks both against the same suite.
type Store interface {
	// InTx runs fn in one read-write transaction and commits it when fn
	// returns nil. When the database reports a serialization failure, a
	// deadlock, or fn returns an error wrapping ErrConflict, InTx rolls back
	// and runs fn again (a bounded number of times), so fn must not have side
	// effects outside tx.
	InTx(ctx context.Context, fn func(ctx context.Context, tx Tx) error) error
	Reader
}

// Tx is the ledger's view of a write transaction.
type Tx interface {
	// FindOperations returns the stored operations with these keys, by key.
	FindOperations(ctx context.Context, keys []string) (map[string]Record, error)
	// OperationLines returns the lines of these operations, by operation id,
	// in posting order.
	OperationLines(ctx context.Context, operationIDs []string) (map[string][]Line, error)
	// LockAccounts locks the accounts (ids are sorted and unique) until the
	// end of the transaction, creating missing ones with a zero balance and
	// GenesisHash, and returns their heads.
	LockAccounts(ctx context.Context, ids []string) (map[string]Account, error)
	// Holds returns the holds with these ids that exist, by id, with their
	// resolution ("" while open).
	Holds(ctx context.Context, ids []string) (map[string]Hold, error)
	// Append writes everything an Apply produced. A key or hold resolution
	// that another transaction wrote first must surface as ErrConflict.
	Append(ctx context.Context, b Batch) error
}

// Batch is the set of rows one Apply appends, plus the new account heads.
type Batch struct {
	Operations  []Record
	Lines       []Line
	Accounts    []Account // new heads of every account a line touched
	Holds       []Hold
	Resolutions []Resolution
}

// Resolution records that a hold was charged or released, by which operation.
// The hold id is unique: a hold resolves at most once.
type Resolution struct {
	HoldID      string
	Resolution  string
	OperationID string
	CreatedAt   time.Time
}

// Reader reads the ledger outside write transactions.
type Reader interface {
	// Account returns an account's head; an account never written to is
	// returned at zero with GenesisHash.
	Account(ctx context.Context, id string) (Account, error)
	// Lines returns an account's lines in sequence order.
	Lines(ctx context.Context, account string, q LineQuery) ([]Line, error)
	// Totals sums a wallet's lines by type and earn mode (kept as the
	// lines are written, so a read does not grow with the history); an
	// account of another class is an error.
	Totals(ctx context.Context, account string) ([]Total, error)
	// Scan calls fn for every line, ordered by account then sequence.
	Scan(ctx context.Context, fn func(Line) error) error
	// Accounts returns every account head.
	Accounts(ctx context.Context) ([]Account, error)
	// AllHolds returns every hold with its resolution.
	AllHolds(ctx context.Context) ([]Hold, error)
	// OperationIDs calls fn with the id of every stored operation, in id
	// order. (On PostgreSQL no foreign key ties a line to its operation or
	// its account, a per-row check that halved the insert rate of lines:
	// Verify checks both from the rows instead.)
	OperationIDs(ctx context.Context, fn func(id string) error) error
}

// LineQuery selects lines of one account.
type LineQuery struct {
	AfterSeq int64     // only lines with seq > AfterSeq (a page cursor)
	From     time.Time // only lines at or after From, when set
	Before   time.Time // only lines strictly before Before, when set
	Limit    int       // at most Limit lines; 0 means no limit
}

// Total is the sum of an account's lines of one type and earn mode.
type Total struct {
	Type     LineType
	EarnMode EarnMode
	Amount   int64
	Count    int64
}

// ErrConflict is returned by a Tx when a concurrent transaction won a race on
// a unique key; InTx retries the whole transaction, which then sees the
// winner's rows.
var ErrConflict = errors.New("ledger: concurrent transaction conflict")
