package failovertest

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/xpromo/xpromo/server/crashtest"
)

// FaultKind is one way of losing the primary.
type FaultKind string

// The fault kinds, in the order the cycles take them.
const (
	// KillAll: SIGKILL of the primary's Patroni and postmaster; the
	// leader key expires (ttl), a standby is promoted, the harness starts
	// Patroni again and the old node rejoins (pg_rewind).
	KillAll FaultKind = "kill-patroni-and-postgres"
	// KillPostmaster: SIGKILL of the postmaster alone; Patroni, alive,
	// restarts it (crash recovery) or fails over.
	KillPostmaster FaultKind = "kill-postmaster"
	// Freeze: SIGSTOP of the primary's Patroni and PostgreSQL for 30 s,
	// then SIGCONT: a primary that hangs and comes back.
	Freeze FaultKind = "sigstop-30s"
	// Partition: the primary's link cut (the root end of its network
	// namespace's veth down) for partitionFor, longer than Patroni's ttl,
	// then restored: the primary, cut from etcd, demotes itself; a standby
	// takes the leader key once it expires; the old primary, back, rejoins
	// (pg_rewind when it wrote past the promotion point).
	Partition FaultKind = "partition-45s"
)

// FaultKinds are the kinds a run takes in turn.
var FaultKinds = []FaultKind{KillAll, KillPostmaster, Freeze, Partition}

// freezeFor is how long Freeze holds the primary stopped.
const freezeFor = 30 * time.Second

// partitionFor is how long Partition cuts the primary's link: past
// Patroni's ttl (30 s) and one loop_wait (10 s), so that the leader key
// expires and a standby is promoted while the old primary is away.
const partitionFor = 45 * time.Second

// recoveryLimit bounds each wait of a fault: for writes again, for the
// old node to rejoin.
const recoveryLimit = 3 * time.Minute

// FaultReport is one fault, measured.
type FaultReport struct {
	Cycle      int
	Kind       FaultKind
	OldLeader  string
	NewLeader  string
	SyncBefore string // the synchronous standby when the fault came
	// HeldBack (the control) counts the writes answered while the
	// standbys were held back, before the primary was killed.
	HeldBack int
	At       time.Time
	// WritesBack is from the fault to the first write committed through
	// the front door (the harness's probe).
	WritesBack time.Duration
	// Rejoined is from the fault to every node replicating again.
	Rejoined time.Duration
	// FirstWrite is, per instance, from the fault to its first answered
	// write (a 2xx POST) that went out after it.
	FirstWrite []time.Duration
	// Lag is each replica's lag behind the leader's WAL position after
	// the cycle's load, at the digest check (Cluster.agree).
	Lag []NodeLag
}

// injector breaks the cluster once per cycle.
type injector struct {
	c       *Cluster
	front   string // the front door's URL (postgres database): where the probe writes
	kinds   []FaultKind
	control bool // the negative control: standbys held back, async
	watch   *watcher
	reports []*FaultReport
}

// fault is Config.Fault: the cycle's fault, to writes committed again and
// the old node back.
func (in *injector) fault(ctx context.Context, cycle int) (res crashtest.FaultResult, err error) {
	kind := in.kinds[(cycle-1)%len(in.kinds)]
	// Before the fault: a synchronous standby exists (strict mode's
	// promise only holds with one).
	leader, err := in.c.WaitHealthy(ctx, recoveryLimit)
	if err != nil {
		return res, fmt.Errorf("before the fault: %w", err)
	}
	r := &FaultReport{Cycle: cycle, Kind: kind, OldLeader: leader.Name}
	if !in.control {
		sync, err := in.c.SyncStandby(ctx)
		if err != nil {
			return res, fmt.Errorf("before the fault: %w", err)
		}
		r.SyncBefore = sync.Name
	} else {
		// Hold the standbys back: the primary's WAL senders stopped, every
		// commit from here on is on the primary alone (stopping the
		// standbys' WAL receivers is not enough: what the senders wrote
		// waits in the receivers' sockets, and arrives once they go on);
		// let the load have some acknowledged, then kill the primary.
		//
		// The fault comes as the cycle's first operation goes out
		// (crashtest.Config.FaultEarly), so the cycle's whole load meets
		// the hold. Aimed like the other cycles' faults, inside a random
		// operation of one kind, it sometimes fell in one of the last: the
		// load was over, no write was answered under the hold, and the
		// control had nothing to lose (the rehearsal of 2026-12-03, three
		// holds of 20 s in a row; an earlier guess blamed the stopped
		// senders, but the writes came as soon as the load did).
		held, err := holdWALSenders(leader)
		if err != nil {
			return res, err
		}
		base := in.watch.writes()
		_ = waitFor(ctx, 20*time.Second, "acknowledged writes on the primary alone", func() error {
			if in.watch.writes() < base+10 {
				return fmt.Errorf("%d so far", in.watch.writes()-base)
			}
			return nil
		})
		r.HeldBack = in.watch.writes() - base
		if r.HeldBack == 0 {
			in.c.note(fmt.Sprintf("negative control: no write answered in 20 s with %s's WAL senders (%d) stopped: nothing to lose", leader.Name, len(held)))
		}
	}
	in.watch.mark(cycle)
	r.At = time.Now()
	probe := func() error { return in.c.exec(ctx, in.front, `INSERT INTO failover_probe VALUES (now())`) }
	var backAt time.Time // a write committed through the front door while the fault held
	switch kind {
	case KillAll:
		leader.patroni.kill()
		if err := killPostgres(leader, syscall.SIGKILL); err != nil {
			return res, err
		}
	case KillPostmaster:
		if pm := leader.postmaster(); pm == 0 {
			return res, fmt.Errorf("%s runs no postmaster", leader.Name)
		} else if err := syscall.Kill(pm, syscall.SIGKILL); err != nil {
			return res, err
		}
	case Freeze:
		pids := append([]int{leader.patroni.cmd.Process.Pid}, leader.postgresProcesses()...)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGSTOP)
		}
		backAt = holdProbing(ctx, freezeFor, probe)
		// Children forked meanwhile cannot exist (the postmaster was
		// stopped), so the same list wakes them all.
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	case Partition:
		if err := leader.setLink(false); err != nil {
			return res, err
		}
		backAt = holdProbing(ctx, partitionFor, probe)
		if err := leader.setLink(true); err != nil {
			return res, err
		}
	default:
		return res, fmt.Errorf("fault kind %s is not built", kind)
	}
	if backAt.IsZero() {
		if err := waitFor(ctx, recoveryLimit, "a write committed through the front door", probe); err != nil {
			return res, fmt.Errorf("after the fault: %w", err)
		}
		backAt = time.Now()
	}
	r.WritesBack = backAt.Sub(r.At)
	if kind == KillAll {
		// The old node comes back: its Patroni, started again, rewinds it.
		if err := in.c.startPatroni(leader); err != nil {
			return res, err
		}
	}
	newLeader, err := in.c.WaitHealthy(ctx, recoveryLimit)
	if err != nil {
		return res, fmt.Errorf("the old primary did not rejoin: %w", err)
	}
	r.NewLeader = newLeader.Name
	r.Rejoined = time.Since(r.At)
	in.reports = append(in.reports, r)
	res.Summary = fmt.Sprintf("%s on %s (sync standby %s): writes again after %s, leader %s, all nodes replicating after %s",
		kind, r.OldLeader, orNone(r.SyncBefore), r.WritesBack.Round(100*time.Millisecond), r.NewLeader, r.Rejoined.Round(100*time.Millisecond))
	if in.control {
		res.Summary += fmt.Sprintf("; %d writes answered with the standbys held back", r.HeldBack)
	}
	return res, nil
}

// holdProbing lets d pass while probing for a committed write, and
// returns when the first one committed (zero when none did): a fault that
// holds (Freeze, Partition) may be failed over before it ends.
func holdProbing(ctx context.Context, d time.Duration, probe func() error) time.Time {
	end := time.Now().Add(d)
	var back time.Time
	for time.Now().Before(end) && ctx.Err() == nil {
		if back.IsZero() && probe() == nil {
			back = time.Now()
		}
		select {
		case <-ctx.Done():
		case <-time.After(min(500*time.Millisecond, max(0, time.Until(end)))):
		}
	}
	return back
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// killPostgres signals every process of the node's PostgreSQL.
func killPostgres(n *Node, sig syscall.Signal) error {
	pids := n.postgresProcesses()
	if len(pids) == 0 {
		return fmt.Errorf("%s runs no PostgreSQL", n.Name)
	}
	for _, pid := range pids {
		_ = syscall.Kill(pid, sig)
	}
	return nil
}

// holdWALSenders stops (SIGSTOP) the leader's WAL senders; the kill that
// follows ends them.
func holdWALSenders(leader *Node) ([]int, error) {
	var held []int
	for _, pid := range leader.postgresProcesses() {
		if strings.Contains(processName(pid), "walsender") {
			if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
				return held, err
			}
			held = append(held, pid)
		}
	}
	if len(held) == 0 {
		return nil, fmt.Errorf("no WAL sender found on %s", leader.Name)
	}
	return held, nil
}
