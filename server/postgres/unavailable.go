package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/xpromo/xpromo/server/apperr"
)

// What a failover (or any loss of the database) looks like from here, and
// what the store does about it (docs/operations.md, "High availability").
//
// A transaction that failed because the database went away, before its
// COMMIT was sent, certainly did not commit: update runs it again, with a
// growing pause, until the database answers, the caller's deadline passes
// or unavailableFor has gone by; then the failure answers 503 unavailable
// (the client retries after retry_after). A COMMIT sent without an answer
// may have committed: it is never run again here, and answers 503 asking
// for a retry with the same Idempotency-Key, whose replay tells.

// Failure classes, the label of xpromo_db_errors_total.
const (
	classConnection    = "connection"     // lost, refused, reset: the server or the network is gone
	classReadOnly      = "read_only"      // 25006, or a standby: the node is not (or no longer) the primary
	classShutdown      = "shutdown"       // 57P01-57P03: the server is stopping, crashed or starting
	classBusy          = "busy"           // 53300: no connection slot left
	classTimeout       = "timeout"        // 57014: a statement ran past statement_timeout
	classCommitUnknown = "commit_unknown" // COMMIT sent, no answer
)

// unavailableFor bounds how long a transaction is run again while the
// database is unavailable, when the caller's context sets no earlier
// deadline: about a Patroni failover (ttl 30 s) and then some.
const unavailableFor = 30 * time.Second

// unavailableClass returns the failure class of err when it means the
// database (not the request) failed, else "". A failure of the caller's own
// context is the caller's: the HTTP layer answers it. A network error counts
// only with connGone (the connection failed, which pgx closes it for, or
// none was had): one that work inside the transaction met elsewhere (an
// outside call) is not the database's.
func unavailableClass(ctx context.Context, err error, connGone bool) string {
	if err == nil || ctx.Err() != nil {
		return ""
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case strings.HasPrefix(pe.Code, "08"): // connection_exception
			return classConnection
		case pe.Code == "25006": // read_only_sql_transaction: a standby, or a demoted primary
			return classReadOnly
		case pe.Code == "57P01", pe.Code == "57P02", pe.Code == "57P03": // admin_shutdown, crash_shutdown, cannot_connect_now
			return classShutdown
		case pe.Code == "53300": // too_many_connections
			return classBusy
		case pe.Code == "57014" && strings.Contains(pe.Message, "statement timeout"):
			return classTimeout
		}
		return ""
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce):
		return classConnection
	case !connGone:
	case errors.As(err, &ne),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed),
		// pgx's "conn closed": a pooled connection the driver had already
		// closed (its socket went away with the primary), found on acquire
		// or first use. Nothing was sent on it (the 20-cycle failover run's
		// one 500, a sweep after SIGKILL of the primary).
		errors.Is(err, pgconn.ErrConnClosed),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return classConnection
	}
	return ""
}

// errUnavailable is a failure of the database, answered 503 unavailable.
// rerun tells whether it came before COMMIT was sent (nothing committed).
type errUnavailable struct {
	class string
	rerun bool
	err   error
}

func (e *errUnavailable) Error() string {
	return "postgres: the database is unavailable (" + e.class + "): " + e.err.Error()
}

// Unwrap exposes the application error (503 unavailable) and the driver's.
func (e *errUnavailable) Unwrap() []error { return []error{e.app(), e.err} }

func (e *errUnavailable) app() *apperr.Error {
	if e.class == classCommitUnknown {
		return apperr.New(apperr.Unavailable, "the database did not answer the commit, so whether this request took effect is unknown: retry it with the same Idempotency-Key, whose replay tells")
	}
	return apperr.New(apperr.Unavailable, "the database is unavailable; retry after retry_after")
}

// unavailable returns err as an *errUnavailable when it is one of the
// classes above (an *errUnavailable stays as it is), else nil.
func unavailable(ctx context.Context, err error, connGone, rerun bool) *errUnavailable {
	var u *errUnavailable
	if errors.As(err, &u) {
		return u
	}
	if c := unavailableClass(ctx, err, connGone); c != "" {
		return &errUnavailable{class: c, rerun: rerun, err: err}
	}
	return nil
}

// errSyncCancelled is a COMMIT that PostgreSQL reports done although its
// wait for the synchronous standby was cancelled ("canceling wait for
// synchronous replication"): committed locally, maybe on no standby, so
// lost if the primary fails now. It is not acknowledged: the answer is
// "unknown", and the retry's replay waits for the standby.
var errSyncCancelled = errors.New("postgres: the commit's wait for the synchronous standby was cancelled: committed on the primary only")

// syncCancelledKey marks, in the connection's CustomData, a notice that a
// synchronous-replication wait was cancelled; dropKey marks a connection
// the pool must not keep (it answered from a read-only node).
const (
	syncCancelledKey = "xpromo.sync_cancelled"
	dropKey          = "xpromo.drop"
)

// onNotice watches for PostgreSQL's warning that a commit's synchronous
// replication wait was cancelled (by statement_timeout, a cancel request or
// pg_cancel_backend); the commit then answers success, which must not be
// taken as durable.
func onNotice(c *pgconn.PgConn, n *pgconn.Notice) {
	if strings.Contains(n.Message, "wait for synchronous replication") {
		c.CustomData()[syncCancelledKey] = true
	}
}

// keepConn is the pool's AfterRelease: a connection is dropped when it
// answered as a read-only node (a standby, or a primary demoted under it)
// or when it is to a node in hot standby, so the next transaction connects
// afresh, to the primary (haproxy's or target_session_attrs' choice).
func keepConn(c *pgx.Conn) bool {
	pc := c.PgConn()
	if _, drop := pc.CustomData()[dropKey]; drop {
		return false
	}
	return pc.ParameterStatus("in_hot_standby") != "on"
}
