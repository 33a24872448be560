package failovertest

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/crashtest"
)

// The watcher holds the clients' answers to the failover contract: 503
// and a retrying 409 carry Retry-After, no other 5xx, always an answer;
// definite refusals are only tallied.
func TestWatcherContract(t *testing.T) {
	w := newWatcher(2)
	t0 := time.Now()
	w.mark(1)
	sent := time.Now()
	for _, r := range []crashtest.Response{
		{Sent: sent, At: sent, Instance: 0, Method: "POST", Path: "/a", Status: 503, Code: "unavailable", RetryAfter: true},
		{Sent: sent, At: sent, Instance: 1, Method: "POST", Path: "/a", Status: 409, Code: "idempotency_key_in_use", RetryAfter: true},
		{Sent: sent, At: sent, Instance: 0, Method: "POST", Path: "/a", Status: 409, Code: "insufficient_funds"},
		{Sent: sent, At: sent, Instance: 0, Method: "POST", Path: "/b", Status: 500, Code: "internal"},
		{Sent: sent, At: sent, Instance: 1, Method: "POST", Path: "/c", Status: 503, Code: "unavailable"},
		{Sent: sent, At: sent, Instance: 1, Method: "POST", Path: "/d", Status: 409, Code: "idempotency_key_in_use"},
		{Sent: sent, At: sent, Instance: 0, Method: "POST", Path: "/e", Err: "connection reset"},
	} {
		w.observe(r)
	}
	bad := w.breaches()
	require.Len(t, bad, 4, "%q", bad)
	for i, want := range []string{"/b answered 500", "/c answered 503", "/d answered 409", "/e answered 0"} {
		assert.Contains(t, bad[i], want)
	}
	assert.Equal(t, []string{"409 idempotency_key_in_use ×2", "503 unavailable ×2", "409 insufficient_funds ×1", "500 internal ×1", "no answer ×1"}, w.seenIn(1))

	// The first answered write of each instance, sent after the fault.
	w.observe(crashtest.Response{Sent: t0.Add(-time.Second), At: time.Now(), Instance: 0, Method: "POST", Status: 201})
	assert.Equal(t, []time.Duration{0, 0}, w.firstWrites(1), "a write sent before the fault does not count")
	w.observe(crashtest.Response{Sent: time.Now(), At: time.Now().Add(3 * time.Second), Instance: 1, Method: "POST", Status: 201})
	w.observe(crashtest.Response{Sent: time.Now(), At: time.Now().Add(9 * time.Second), Instance: 1, Method: "POST", Status: 201})
	fw := w.firstWrites(1)
	assert.Zero(t, fw[0])
	assert.InDelta(t, 3, fw[1].Seconds(), 1)
	assert.Equal(t, 3, w.writes())
}

// healthy wants a running leader, every other node replicating on its
// timeline and, synchronous, exactly one sync standby.
func TestHealthy(t *testing.T) {
	c := &Cluster{Nodes: []*Node{{Name: "pg1"}, {Name: "pg2"}, {Name: "pg3"}}}
	ok := []Member{{Name: "pg1", Role: "leader", State: "running", Timeline: 2}, {Name: "pg2", Role: "sync_standby", State: "streaming", Timeline: 2}, {Name: "pg3", Role: "replica", State: "running", Timeline: 2}}
	var leader *Node
	require.NoError(t, c.healthy(ok, &leader))
	assert.Equal(t, "pg1", leader.Name)

	noSync := []Member{ok[0], {Name: "pg2", Role: "replica", State: "running", Timeline: 2}, ok[2]}
	leader = nil
	err := c.healthy(noSync, &leader)
	assert.ErrorIs(t, err, errNoSync)
	require.NotNil(t, leader, "the leader is known without a sync standby (WaitHealthy then asks its PostgreSQL)")
	assert.Equal(t, "pg1", leader.Name)
	behind := []Member{ok[0], ok[1], {Name: "pg3", Role: "replica", State: "running", Timeline: 1}}
	assert.ErrorContains(t, c.healthy(behind, &leader), "pg3 is not replicating on timeline 2")
	assert.ErrorContains(t, c.healthy(ok[1:], &leader), "no running leader")
	c.cfg.Async = true
	assert.NoError(t, c.healthy(noSync, &leader), "asynchronous: no sync standby needed")
}

// The configurations carry the settings docs/operations.md gives.
func TestConfigs(t *testing.T) {
	cfg := ClusterConfig{BasePort: 15400, Dir: "/dev/shm/x"}
	n := &Node{Name: "pg2", Host: "127.0.0.1", PGPort: 15422, APIPort: 15412, dir: "/dev/shm/x/pg2"}
	p := patroniConfig(cfg, "127.0.0.1", n)
	for _, want := range []string{"synchronous_mode: true", "synchronous_mode_strict: true", "synchronous_node_count: 1", "ttl: 30", "loop_wait: 10", "retry_timeout: 10", "use_pg_rewind: true", `wal_log_hints: "on"`, `hot_standby_feedback: "on"`, "listen: 127.0.0.1:15422", "hosts: 127.0.0.1:15400"} {
		assert.Contains(t, p, want)
	}
	assert.Contains(t, p, "\netcd:\n  hosts: 127.0.0.1:15400\n", "the v2 API by default (DCSEtcd3 says why)")
	cfg.DCS = DCSEtcd3
	assert.Contains(t, patroniConfig(cfg, "127.0.0.1", n), "\netcd3:\n  hosts: 127.0.0.1:15400\n")
	cfg.DCS = ""
	cfg.Async = true
	assert.Contains(t, patroniConfig(cfg, "127.0.0.1", n), "synchronous_mode: false")

	// In its own network namespace the node listens on its address and
	// trusts the subnet; etcd is the bridge's address.
	nn := &Node{Name: "pg1", Host: nodeAddr(0), Netns: nodeNetns(0), PGPort: 15421, APIPort: 15411, dir: "/dev/shm/x/pg1"}
	pn := patroniConfig(cfg, bridgeAddr, nn)
	for _, want := range []string{"listen: 10.231.0.11:15421", "connect_address: 10.231.0.11:15411", "hosts: 10.231.0.1:15400", "host replication all 10.231.0.0/24 trust"} {
		assert.Contains(t, pn, want)
	}
	assert.Equal(t, "xpfo-pg1h", hostVeth(nn.Netns), "the root end's name fits IFNAMSIZ (15)")
	h := haproxyConfig(cfg, []*Node{n})
	for _, want := range []string{"option httpchk GET /primary", "inter 1s fall 2 rise 1 on-marked-down shutdown-sessions", "bind 127.0.0.1:15430", "server pg2 127.0.0.1:15422 maxconn 200 check port 15412"} {
		assert.Contains(t, h, want)
	}
	c := &Cluster{cfg: cfg, Nodes: []*Node{{Host: "127.0.0.1", PGPort: 15421}, {Host: "127.0.0.1", PGPort: 15422}, {Host: "127.0.0.1", PGPort: 15423}}}
	u := c.MultiHostURL("xp")
	assert.True(t, strings.HasPrefix(u, "postgres://postgres@127.0.0.1:15421,127.0.0.1:15422,127.0.0.1:15423/xp?"), u)
	assert.Contains(t, u, "target_session_attrs=read-write")
}

// The stale /sync key is one naming a leader other than the key holder.
func TestStaleSyncKey(t *testing.T) {
	pg2 := "pg2"
	assert.True(t, staleSyncKey(&syncKey{Leader: "pg2"}, "pg3"), "the promoting standby's key, the old primary back with the leader key")
	assert.False(t, staleSyncKey(&syncKey{Leader: "pg3", SyncStandby: &pg2}, "pg3"))
	assert.False(t, staleSyncKey(&syncKey{}, "pg3"))
}

func TestLagsString(t *testing.T) {
	assert.Equal(t, "pg1 7984 B, 1.8 s; pg3 0 B, 0.1 s", lagsString([]NodeLag{{Node: "pg1", Bytes: 7984, Waited: 1800 * time.Millisecond}, {Node: "pg3", Waited: 100 * time.Millisecond}}))
}

// A failover run of three cycles or more whose payouts never reached a
// transfer fails (the payout path was not exercised); one that sent any
// passes that check; shorter runs and the control are not held to it.
func TestNoTransfersFails(t *testing.T) {
	payout := func(cycle int, transfer string) *crashtest.Op {
		return &crashtest.Op{Kind: crashtest.KindPayout, Cycle: cycle, Outcome: crashtest.Acknowledged, Transfer: transfer}
	}
	refused := &crashtest.Op{Kind: crashtest.KindPayout, Cycle: 1, Outcome: crashtest.Refused, Code: "below_minimum"}
	run := func(cycles int, control bool, ops ...*crashtest.Op) *RouteRun {
		rep := &crashtest.StoreReport{Cycles: cycles}
		rep.Count(ops)
		return &RouteRun{Control: control, Store: rep}
	}
	none := run(3, false, refused)
	assert.True(t, none.NoTransfers())
	assert.Equal(t, 1, none.Failures())

	sent := run(3, false, refused, payout(2, "tr_1"), payout(3, "tr_2"), payout(3, "tr_3"))
	assert.False(t, sent.NoTransfers())
	assert.Equal(t, 0, sent.Failures())
	assert.Equal(t, map[int]int{2: 1, 3: 2}, sent.Store.Transfers)
	assert.Equal(t, 3, sent.Store.TransfersTotal())

	assert.False(t, run(2, false, refused).NoTransfers())
	assert.False(t, run(3, true, refused).NoTransfers())
}
