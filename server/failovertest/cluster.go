package failovertest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
)

// The loopback ports of a cluster, from the base port (the failover
// test's range is 15400-15499): etcd's client and peer ports, each
// node's Patroni REST API and PostgreSQL, and haproxy's front door.
const (
	etcdClientOffset = 0  // base+0
	etcdPeerOffset   = 1  // base+1
	restOffset       = 11 // base+11.. base+13
	pgOffset         = 21 // base+21.. base+23
	haproxyOffset    = 30 // base+30
	nodeCount        = 3
)

// ClusterConfig is one cluster.
type ClusterConfig struct {
	// BasePort: the cluster's ports are BasePort+0 to BasePort+30.
	BasePort int
	// Async turns synchronous replication off (the negative control,
	// and the cost measurement's other half).
	Async bool
	// Dir is created under /dev/shm (tmpfs): the etcd and PostgreSQL
	// data, the configurations and logs.
	Dir string
	// Netns puts each node in its own network namespace (netns.go), for
	// the partition fault; needs root. Otherwise every node is on
	// 127.0.0.1.
	Netns bool
	// DCS is Patroni's etcd API: DCSEtcd2 (the default) or DCSEtcd3.
	DCS string
	Out io.Writer
}

// Patroni's etcd APIs. Debian 12's Patroni 3.0.2 on the v3 API overwrites
// the leader key unconditionally when its lease has expired
// (etcd3._update_leader: a new lease, then a put without a compare): a
// primary frozen past the ttl wakes, takes the leader key back from the
// standby that was promoting meanwhile, and the writes the standby
// acknowledged are rewound away. The harness lost acknowledged writes
// that way (docs/operations.md, "High availability"); upstream fixed it
// in 3.0.3 (patroni/patroni#2689, a compare on the old value). On the v2
// API the refresh is a compare-and-swap on the node's own name
// (test_and_set), which fails once another node holds the key: the old
// primary demotes instead.
const (
	DCSEtcd2 = "etcd"
	DCSEtcd3 = "etcd3"
)

// Cluster is one etcd, three Patroni nodes and haproxy, on loopback.
type Cluster struct {
	cfg     ClusterConfig
	etcd    *proc
	haproxy *proc
	Nodes   []*Node
	cred    *syscall.Credential // the postgres user's, when run as root
	// Notes are findings about the cluster itself (not xpromo's), printed
	// as they come and in the report.
	Notes []string
}

// Node is one Patroni node and its PostgreSQL.
type Node struct {
	Name    string
	PGPort  int
	APIPort int
	// Host is the node's address: 127.0.0.1, or 10.231.0.1N in its
	// network namespace Netns.
	Host    string
	Netns   string
	dir     string
	patroni *proc
}

// proc is a child process and its end.
type proc struct {
	cmd    *exec.Cmd
	exited chan struct{}
}

func startProc(name string, args []string, logPath string, cred *syscall.Credential, env []string) (*proc, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = log, log
	// Its own process group, killed with this process should it die
	// without tearing down (Pdeathsig; the postmasters Patroni starts are
	// killed by their pids, see Node.stop).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL, Credential: cred}
	if env != nil {
		cmd.Env = env
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	return p, nil
}

// signal signals the process (nothing when it has exited).
func (p *proc) signal(sig syscall.Signal) {
	if p == nil {
		return
	}
	select {
	case <-p.exited:
	default:
		_ = p.cmd.Process.Signal(sig)
	}
}

// kill kills the process and waits for it.
func (p *proc) kill() {
	if p == nil {
		return
	}
	p.signal(syscall.SIGKILL)
	<-p.exited
}

// Tools the failover test needs on PATH (or where Debian puts them).
var Tools = []string{"etcd", "patroni", "patronictl", "haproxy", "ip"}

// MissingTools lists the tools not found.
func MissingTools() []string {
	var missing []string
	for _, t := range Tools {
		if _, err := exec.LookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if _, err := os.Stat(pgBinDir()); err != nil {
		missing = append(missing, "PostgreSQL server binaries ("+pgBinDir()+")")
	}
	return missing
}

// pgBinDir is Debian's PostgreSQL binary directory (XPROMO_PG_BIN_DIR
// overrides).
func pgBinDir() string {
	if d := os.Getenv("XPROMO_PG_BIN_DIR"); d != "" {
		return d
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(matches) == 0 {
		return "/usr/lib/postgresql/15/bin"
	}
	return filepath.Dir(matches[len(matches)-1])
}

// StartCluster brings the cluster up and waits for a leader and a
// synchronous standby (or, async, two streaming replicas). On error
// everything it started is torn down.
func StartCluster(ctx context.Context, cfg ClusterConfig) (_ *Cluster, err error) {
	c := &Cluster{cfg: cfg}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return c, err
	}
	if os.Geteuid() == 0 {
		// PostgreSQL refuses to run as root.
		u, err := user.Lookup("postgres")
		if err != nil {
			return c, fmt.Errorf("running as root, the nodes run as the postgres user: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		c.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	}
	if cfg.Netns {
		if err := setupNetwork(nodeCount); err != nil {
			return c, fmt.Errorf("the nodes' network namespaces: %w", err)
		}
	}
	etcdDir := filepath.Join(cfg.Dir, "etcd")
	client := fmt.Sprintf("http://%s:%d", c.etcdHost(), cfg.BasePort+etcdClientOffset)
	peer := fmt.Sprintf("http://%s:%d", c.etcdHost(), cfg.BasePort+etcdPeerOffset)
	if cfg.DCS == "" {
		c.cfg.DCS, cfg.DCS = DCSEtcd2, DCSEtcd2
	}
	if cfg.DCS != DCSEtcd2 && cfg.DCS != DCSEtcd3 {
		return c, fmt.Errorf("DCS %q: want %s or %s", cfg.DCS, DCSEtcd2, DCSEtcd3)
	}
	c.etcd, err = startProc("etcd", []string{
		"--name", "e1", "--data-dir", etcdDir, "--enable-v2=" + strconv.FormatBool(cfg.DCS == DCSEtcd2),
		"--listen-client-urls", client, "--advertise-client-urls", client,
		"--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer, "--initial-cluster", "e1=" + peer,
	}, filepath.Join(cfg.Dir, "etcd.log"), nil, nil)
	if err != nil {
		return c, err
	}
	if err := waitFor(ctx, 30*time.Second, "etcd to answer", func() error { return httpOK(client + "/health") }); err != nil {
		return c, err
	}
	for i := range nodeCount {
		n := &Node{
			Name:    fmt.Sprintf("pg%d", i+1),
			PGPort:  cfg.BasePort + pgOffset + i,
			APIPort: cfg.BasePort + restOffset + i,
			Host:    "127.0.0.1",
		}
		if cfg.Netns {
			n.Host, n.Netns = nodeAddr(i), nodeNetns(i)
		}
		n.dir = filepath.Join(cfg.Dir, n.Name)
		if err := os.MkdirAll(n.dir, 0o700); err != nil {
			return c, err
		}
		if err := os.WriteFile(n.configPath(), []byte(patroniConfig(cfg, c.etcdHost(), n)), 0o600); err != nil {
			return c, err
		}
		if c.cred != nil {
			if err := os.Chown(n.dir, int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return c, err
			}
			if err := os.Chown(n.configPath(), int(c.cred.Uid), int(c.cred.Gid)); err != nil {
				return c, err
			}
		}
		c.Nodes = append(c.Nodes, n)
	}
	// The first node bootstraps alone; the others then clone it.
	for i, n := range c.Nodes {
		if err := c.startPatroni(n); err != nil {
			return c, err
		}
		if i == 0 {
			if err := waitFor(ctx, 3*time.Minute, n.Name+" to bootstrap as the leader", func() error {
				return httpOK(n.restURL() + "/primary")
			}); err != nil {
				return c, err
			}
		}
	}
	if err := os.WriteFile(filepath.Join(cfg.Dir, "haproxy.cfg"), []byte(haproxyConfig(cfg, c.Nodes)), 0o644); err != nil {
		return c, err
	}
	c.haproxy, err = startProc("haproxy", []string{"-f", filepath.Join(cfg.Dir, "haproxy.cfg"), "-db"}, filepath.Join(cfg.Dir, "haproxy.log"), nil, nil)
	if err != nil {
		return c, err
	}
	if _, err := c.WaitHealthy(ctx, 2*time.Minute); err != nil {
		return c, err
	}
	// The probe table: a write through the front door tells when the
	// cluster takes (synchronously replicated) commits again.
	if err := c.exec(ctx, c.HAProxyURL("postgres"), `CREATE TABLE IF NOT EXISTS failover_probe (at timestamptz NOT NULL)`); err != nil {
		return c, fmt.Errorf("creating the probe table: %w", err)
	}
	return c, nil
}

func (n *Node) configPath() string { return filepath.Join(n.dir, "patroni.yml") }
func (n *Node) dataDir() string    { return filepath.Join(n.dir, "data") }
func (n *Node) restURL() string    { return fmt.Sprintf("http://%s:%d", n.Host, n.APIPort) }

// URL is a libpq URL of the node itself, for database db.
func (n *Node) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@%s:%d/%s?sslmode=disable&connect_timeout=3", n.Host, n.PGPort, db)
}

// etcdHost is etcd's address: the bridge's in the netns topology.
func (c *Cluster) etcdHost() string {
	if c.cfg.Netns {
		return bridgeAddr
	}
	return "127.0.0.1"
}

func (c *Cluster) startPatroni(n *Node) error {
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + n.dir, "LANG=C.UTF-8"}
	name, args, cred := "patroni", []string{n.configPath()}, c.cred
	if n.Netns != "" {
		// ip netns exec and setpriv each exec the next: the pid started is
		// Patroni's (Freeze signals it). The credentials change clears
		// Pdeathsig, so a run killed before its teardown leaves the node
		// running: the next run's removeNetwork kills what its namespace
		// holds.
		args = append([]string{"netns", "exec", n.Netns, "setpriv", "--reuid=" + strconv.Itoa(int(cred.Uid)), "--regid=" + strconv.Itoa(int(cred.Gid)), "--clear-groups", "--", "patroni"}, args...)
		name, cred = "ip", nil
	}
	p, err := startProc(name, args, filepath.Join(n.dir, "patroni.log"), cred, env)
	if err != nil {
		return err
	}
	n.patroni = p
	return nil
}

// patroniConfig is a node's configuration: the settings docs/operations.md
// ("High availability") gives, on loopback.
func patroniConfig(cfg ClusterConfig, etcdHost string, n *Node) string {
	sync, lag := "true", "1048576"
	if cfg.Async {
		// The negative control fails over to a standby held far behind.
		sync, lag = "false", "1073741824"
	}
	return fmt.Sprintf(`scope: xpromo-failover
name: %[1]s
restapi:
  listen: %[9]s:%[2]d
  connect_address: %[9]s:%[2]d
%[12]s:
  hosts: %[10]s:%[3]d
bootstrap:
  dcs:
    ttl: 30
    loop_wait: 10
    retry_timeout: 10
    maximum_lag_on_failover: %[7]s
    synchronous_mode: %[6]s
    synchronous_mode_strict: %[6]s
    synchronous_node_count: 1
    postgresql:
      use_pg_rewind: true
      use_slots: true
      parameters:
        wal_log_hints: "on"
        hot_standby_feedback: "on"
        max_connections: 100
  initdb:
  - encoding: UTF8
  - locale: C.UTF-8
  - auth-local: trust
  - auth-host: trust
  pg_hba:
  - local all all trust
  - host all all 127.0.0.1/32 trust
  - host replication all 127.0.0.1/32 trust
  - host all all %[11]s trust
  - host replication all %[11]s trust
postgresql:
  listen: %[9]s:%[4]d
  connect_address: %[9]s:%[4]d
  data_dir: %[5]s/data
  bin_dir: %[8]s
  pgpass: %[5]s/pgpass
  # A replica's pg_basebackup asks for a fast checkpoint, so that creating
  # or re-creating a replica never waits for a spread one.
  basebackup:
  - checkpoint: fast
  authentication:
    superuser:
      username: postgres
    replication:
      username: postgres
    rewind:
      username: postgres
  parameters:
    unix_socket_directories: %[5]s
    log_line_prefix: '%%m [%%p] '
`, n.Name, n.APIPort, cfg.BasePort+etcdClientOffset, n.PGPort, n.dir, sync, lag, pgBinDir(), n.Host, etcdHost, subnet, cmp.Or(cfg.DCS, DCSEtcd2))
}

// haproxyConfig routes the front door to the node whose Patroni answers
// GET /primary 200 (docs/operations.md).
func haproxyConfig(cfg ClusterConfig, nodes []*Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
    maxconn 1000
defaults
    mode tcp
    timeout connect 3s
    timeout client 30m
    timeout server 30m
    timeout check 2s
listen postgres
    bind 127.0.0.1:%d
    option httpchk GET /primary
    http-check expect status 200
    default-server inter 1s fall 2 rise 1 on-marked-down shutdown-sessions
`, cfg.BasePort+haproxyOffset)
	for _, n := range nodes {
		fmt.Fprintf(&b, "    server %s %s:%d maxconn 200 check port %d\n", n.Name, n.Host, n.PGPort, n.APIPort)
	}
	return b.String()
}

// HAProxyURL is the front door's URL for database db.
func (c *Cluster) HAProxyURL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=3", c.cfg.BasePort+haproxyOffset, db)
}

// MultiHostURL lists the three nodes, for libpq's (and pgx's)
// target_session_attrs=read-write, without haproxy.
func (c *Cluster) MultiHostURL(db string) string {
	var hosts []string
	for _, n := range c.Nodes {
		hosts = append(hosts, fmt.Sprintf("%s:%d", n.Host, n.PGPort))
	}
	return fmt.Sprintf("postgres://postgres@%s/%s?sslmode=disable&connect_timeout=3&target_session_attrs=read-write", strings.Join(hosts, ","), db)
}

// Member is one node as Patroni's GET /cluster lists it.
type Member struct {
	Name     string `json:"name"`
	Role     string `json:"role"`  // leader, sync_standby, replica
	State    string `json:"state"` // running, streaming, stopped, starting, …
	Timeline int    `json:"timeline"`
	Lag      any    `json:"lag"`
}

// Members asks the nodes' REST APIs in turn for the cluster's members.
func (c *Cluster) Members(ctx context.Context) ([]Member, error) {
	var errs []error
	for _, n := range c.Nodes {
		var out struct {
			Members []Member `json:"members"`
		}
		if err := getJSON(ctx, n.restURL()+"/cluster", &out); err != nil {
			errs = append(errs, err)
			continue
		}
		return out.Members, nil
	}
	return nil, errors.Join(errs...)
}

// WaitHealthy waits until the cluster has a leader and every other node
// is a replica on the leader's timeline, one of them its synchronous
// standby (unless async), and returns the leader.
func (c *Cluster) WaitHealthy(ctx context.Context, limit time.Duration) (*Node, error) {
	var leader *Node
	start := time.Now()
	repaired := false
	err := waitFor(ctx, limit, "a leader, a synchronous standby and every node replicating", func() error {
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		err = c.healthy(ms, &leader)
		// Patroni's stale /sync key (synckey.go): repaired once past two
		// loops; the harness then waits for Patroni's own view again.
		if errors.Is(err, errNoSync) && time.Since(start) > syncKeyRepairAfter && !repaired {
			if what, rerr := c.repairSyncKey(ctx, leader); rerr != nil {
				c.note("reading Patroni's /sync key: " + rerr.Error())
				repaired = true
			} else if what != "" {
				c.note(what)
				repaired = true
			}
		}
		// Past a full Patroni loop with PostgreSQL replicating
		// synchronously all the same: Patroni's key is stale, not the
		// replication.
		if errors.Is(err, errNoSync) && time.Since(start) > 2*time.Minute {
			if name := c.pgSyncStandby(ctx, leader); name != "" {
				c.note(fmt.Sprintf("Patroni's /cluster named no sync standby for a minute while %s's PostgreSQL replicated synchronously to %s (a stale /sync key): went by PostgreSQL", leader.Name, name))
				return nil
			}
		}
		return err
	})
	return leader, err
}

// note records a finding about the cluster itself (StaleSyncKey).
func (c *Cluster) note(s string) {
	c.Notes = append(c.Notes, s)
	fmt.Fprintf(c.cfg.Out, "failovertest: NOTE: %s\n", s)
}

func (c *Cluster) healthy(ms []Member, leader **Node) error {
	var lead *Member
	syncs, replicas := 0, 0
	for i := range ms {
		switch ms[i].Role {
		case "leader":
			lead = &ms[i]
		case "sync_standby":
			syncs++
		case "replica":
			replicas++
		}
	}
	if lead == nil || lead.State != "running" {
		return fmt.Errorf("no running leader: %s", describe(ms))
	}
	if len(ms) != nodeCount {
		return fmt.Errorf("%d members, not %d: %s", len(ms), nodeCount, describe(ms))
	}
	for _, m := range ms {
		if m.Name == lead.Name {
			continue
		}
		if (m.State != "running" && m.State != "streaming") || m.Timeline != lead.Timeline {
			return fmt.Errorf("%s is not replicating on timeline %d: %s", m.Name, lead.Timeline, describe(ms))
		}
	}
	*leader = c.node(lead.Name)
	if !c.cfg.Async && syncs != 1 {
		return fmt.Errorf("%w: %s", errNoSync, describe(ms))
	}
	return nil
}

// errNoSync: Patroni's GET /cluster names no synchronous standby.
var errNoSync = errors.New("no synchronous standby")

// pgSyncStandby is the standby the leader's PostgreSQL replicates to
// synchronously (pg_stat_replication.sync_state = 'sync'), "" when none.
// Patroni 3.0.2 was seen to keep a stale /sync key after a frozen primary
// came back ("Synchronous replication key updated by someone else", every
// loop), its /cluster then naming no sync standby while PostgreSQL had
// one: the harness then goes by PostgreSQL and says so (StaleSyncKey).
func (c *Cluster) pgSyncStandby(ctx context.Context, leader *Node) string {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, leader.URL("postgres"))
	if err != nil {
		return ""
	}
	defer conn.Close(context.Background())
	var name string
	if err := conn.QueryRow(ctx, `SELECT application_name FROM pg_stat_replication WHERE sync_state = 'sync' AND state = 'streaming' LIMIT 1`).Scan(&name); err != nil {
		return ""
	}
	return name
}

// SyncStandby is the leader's synchronous standby now, or an error when
// there is none.
func (c *Cluster) SyncStandby(ctx context.Context) (*Node, error) {
	ms, err := c.Members(ctx)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if m.Role == "sync_standby" && (m.State == "running" || m.State == "streaming") {
			return c.node(m.Name), nil
		}
	}
	var leader *Node
	if err := c.healthy(ms, &leader); errors.Is(err, errNoSync) && leader != nil {
		if name := c.pgSyncStandby(ctx, leader); name != "" {
			return c.node(name), nil // Patroni's key is stale (WaitHealthy noted it)
		}
	}
	return nil, fmt.Errorf("no synchronous standby: %s", describe(ms))
}

func describe(ms []Member) string {
	var parts []string
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s %s %s tl%d", m.Name, m.Role, m.State, m.Timeline))
	}
	return strings.Join(parts, ", ")
}

func (c *Cluster) node(name string) *Node {
	for _, n := range c.Nodes {
		if n.Name == name {
			return n
		}
	}
	return nil
}

// postmaster is the node's postmaster pid (from postmaster.pid), 0 when
// it runs none.
func (n *Node) postmaster() int {
	b, err := os.ReadFile(filepath.Join(n.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0]))
	if err != nil || pid <= 0 {
		return 0
	}
	// A stale file of a killed postmaster names a pid that may be reused:
	// it must be a postgres of this data directory.
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !strings.Contains(string(cmdline), n.dataDir()) {
		return 0
	}
	return pid
}

// postgresProcesses are the postmaster and its children.
func (n *Node) postgresProcesses() []int {
	pm := n.postmaster()
	if pm == 0 {
		return nil
	}
	return append([]int{pm}, children(pm)...)
}

// children lists the pids whose parent is pid.
func children(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so cut after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			out = append(out, p)
		}
	}
	return out
}

// processName is /proc/pid/cmdline's text.
func processName(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.ReplaceAll(string(b), "\x00", " ")
}

// stop kills the node's Patroni and PostgreSQL.
func (n *Node) stop() {
	n.patroni.kill()
	for _, pid := range n.postgresProcesses() {
		_ = syscall.Kill(pid, syscall.SIGCONT) // a stopped one too
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// KeepLogs copies the cluster's logs (etcd, haproxy, each node's Patroni
// log, which holds its PostgreSQL's too) into a new directory under the
// temporary directory before Close removes them, and returns its path.
func (c *Cluster) KeepLogs() (string, error) {
	dst, err := os.MkdirTemp("", "xpromo-failovertest-cluster-logs-")
	if err != nil {
		return "", err
	}
	logs, _ := filepath.Glob(filepath.Join(c.cfg.Dir, "*.log"))
	nodeLogs, _ := filepath.Glob(filepath.Join(c.cfg.Dir, "pg*", "patroni.log"))
	for _, src := range append(logs, nodeLogs...) {
		rel, _ := filepath.Rel(c.cfg.Dir, src)
		b, err := os.ReadFile(src)
		if err != nil {
			return dst, err
		}
		if err := os.WriteFile(filepath.Join(dst, strings.ReplaceAll(rel, string(filepath.Separator), "-")), b, 0o644); err != nil {
			return dst, err
		}
	}
	return dst, nil
}

// Close tears the cluster down and removes its directory.
func (c *Cluster) Close() {
	c.haproxy.kill()
	for _, n := range c.Nodes {
		n.stop()
	}
	c.etcd.kill()
	if c.cfg.Netns {
		removeNetwork()
	}
	// The postmasters' children leave once their postmaster is gone; wait
	// for them so that nothing holds the directory.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && c.anyPostgresLeft() {
		time.Sleep(100 * time.Millisecond)
	}
	_ = os.RemoveAll(c.cfg.Dir)
}

// anyPostgresLeft reports a process still running in the cluster's
// directory.
func (c *Cluster) anyPostgresLeft() bool {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		if strings.Contains(processName(mustAtoi(e.Name())), c.cfg.Dir) {
			return true
		}
	}
	return false
}

func mustAtoi(s string) int { n, _ := strconv.Atoi(s); return n }

// exec runs one statement on url.
func (c *Cluster) exec(ctx context.Context, url, sql string, args ...any) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, sql, args...)
	return err
}

func httpOK(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

func getJSON(ctx context.Context, url string, v any) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// waitFor polls check every 200 ms until it passes or limit passes.
func waitFor(ctx context.Context, limit time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("waited %s for %s: %w", limit, what, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// SetSync turns synchronous replication on or off in the cluster's
// dynamic configuration (Patroni's PATCH /config) and waits until the
// cluster shows it: a sync standby, or none. Off also lets a standby far
// behind be promoted (the negative control).
func (c *Cluster) SetSync(ctx context.Context, on bool) error {
	body := `{"synchronous_mode": true, "synchronous_mode_strict": true, "maximum_lag_on_failover": 1048576}`
	if !on {
		body = `{"synchronous_mode": false, "synchronous_mode_strict": false, "maximum_lag_on_failover": 1073741824}`
	}
	var errs []error
	patched := false
	for _, n := range c.Nodes {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPatch, n.restURL()+"/config", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			errs = append(errs, fmt.Errorf("PATCH %s/config: %s", n.restURL(), resp.Status))
			continue
		}
		patched = true
		break
	}
	if !patched {
		return errors.Join(errs...)
	}
	c.cfg.Async = !on
	return waitFor(ctx, time.Minute, fmt.Sprintf("synchronous replication %s", map[bool]string{true: "on", false: "off"}[on]), func() error {
		ms, err := c.Members(ctx)
		if err != nil {
			return err
		}
		for _, m := range ms {
			if !on && m.Role == "sync_standby" {
				return fmt.Errorf("not yet: %s", describe(ms))
			}
		}
		var leader *Node
		if err := c.healthy(ms, &leader); err != nil {
			return err
		}
		// And PostgreSQL itself: Patroni names the standbys a commit waits
		// for in synchronous_standby_names, empty when asynchronous.
		names, err := c.show(ctx, leader, "synchronous_standby_names")
		if err != nil {
			return err
		}
		if (names != "") != on {
			return fmt.Errorf("the leader's synchronous_standby_names is %q", names)
		}
		return nil
	})
}

// show reads a setting on the node.
func (c *Cluster) show(ctx context.Context, n *Node, setting string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, n.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer conn.Close(context.Background())
	var v string
	err = conn.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&v)
	return v, err
}
