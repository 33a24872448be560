package failovertest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
)

// The network-namespace topology, for the partition fault: each node's
// Patroni and PostgreSQL in its own namespace xpfo-pgN, joined to the
// bridge xpfo-br0 in the root namespace by a veth pair (the namespace's
// end named eth0). etcd, haproxy, the xpromo instances and the harness
// stay in the root namespace and reach the nodes over the bridge.
// Cutting a node's link (its root end down) partitions it from all of
// them at once, as a failed switch port would.
const (
	netnsPrefix = "xpfo-"
	bridgeName  = "xpfo-br0"
	// bridgeAddr is etcd's address (the root namespace's, on the bridge);
	// node i (0-based) is 10.231.0.11+i.
	bridgeAddr = "10.231.0.1"
	subnet     = "10.231.0.0/24"
)

func nodeNetns(i int) string    { return fmt.Sprintf("%spg%d", netnsPrefix, i+1) }
func nodeAddr(i int) string     { return fmt.Sprintf("10.231.0.%d", 11+i) }
func hostVeth(ns string) string { return ns + "h" } // "xpfo-pg1h": under IFNAMSIZ

// ipCmd runs ip(8) and returns its error with its output.
func ipCmd(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// NetnsUnavailable says why network namespaces cannot be used here ("" when
// they can): they need root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and ip(8).
func NetnsUnavailable() string {
	if os.Geteuid() != 0 {
		return "not root: network namespaces need CAP_SYS_ADMIN and CAP_NET_ADMIN"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "no ip(8) (Debian's iproute2)"
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		return "no setpriv(1) (Debian's util-linux): the nodes run as the postgres user inside their namespace"
	}
	probe := netnsPrefix + "probe"
	_ = ipCmd("netns", "del", probe)
	if err := ipCmd("netns", "add", probe); err != nil {
		return err.Error()
	}
	_ = ipCmd("netns", "del", probe)
	return ""
}

// removeNetwork kills every process left in an xpfo- namespace (an earlier
// run killed before its teardown) and deletes the namespaces and the
// bridge. Run before setting up and on teardown.
func removeNetwork() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || !strings.HasPrefix(f[0], netnsPrefix) {
			continue
		}
		ns := f[0]
		pids, _ := exec.Command("ip", "netns", "pids", ns).Output()
		for _, p := range strings.Fields(string(pids)) {
			if pid, err := strconv.Atoi(p); err == nil && pid > 1 {
				_ = syscall.Kill(pid, syscall.SIGCONT) // a stopped one too
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		_ = ipCmd("netns", "del", ns)
	}
	// A namespace's veth ends go with it; the bridge is the root's.
	if _, err := os.Stat("/sys/class/net/" + bridgeName); err == nil {
		_ = ipCmd("link", "del", bridgeName)
	}
	if _, err := exec.LookPath("iptables"); err == nil {
		for exec.Command("iptables", append([]string{"-D"}, forwardRule...)...).Run() == nil {
		}
	}
}

// forwardRule lets the nodes reach each other across the bridge when
// frames between bridge ports pass the root's iptables FORWARD chain
// (br_netfilter loaded) and its policy is DROP: what a running Docker
// engine sets. Without it a replica's pg_basebackup hung in connect and
// the cluster never started (a rehearsal run after CI's Docker step).
var forwardRule = []string{"FORWARD", "-i", bridgeName, "-o", bridgeName, "-j", "ACCEPT"}

// allowForwarding puts forwardRule first in FORWARD, when iptables is
// here (without it nothing filters the bridge).
func allowForwarding() error {
	if _, err := exec.LookPath("iptables"); err != nil {
		return nil
	}
	if out, err := exec.Command("iptables", append([]string{"-I", forwardRule[0], "1"}, forwardRule[1:]...)...).CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -I %s: %v: %s", strings.Join(forwardRule, " "), err, out)
	}
	return nil
}

// setupNetwork makes the bridge and one namespace per node, after
// removing what an earlier run left.
func setupNetwork(nodes int) error {
	removeNetwork()
	steps := [][]string{
		{"link", "add", bridgeName, "type", "bridge"},
		{"addr", "add", bridgeAddr + "/24", "dev", bridgeName},
		{"link", "set", bridgeName, "up"},
	}
	for i := range nodes {
		ns := nodeNetns(i)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"link", "add", hostVeth(ns), "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"link", "set", hostVeth(ns), "master", bridgeName, "up"},
			[]string{"-n", ns, "addr", "add", nodeAddr(i) + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", ns, "link", "set", "lo", "up"},
		)
	}
	for _, s := range steps {
		if err := ipCmd(s...); err != nil {
			removeNetwork()
			return err
		}
	}
	if err := allowForwarding(); err != nil {
		removeNetwork()
		return err
	}
	return nil
}

// setLink cuts (up false) or restores the node's link to the bridge.
func (n *Node) setLink(up bool) error {
	if n.Netns == "" {
		return fmt.Errorf("%s has no network namespace", n.Name)
	}
	state := "down"
	if up {
		state = "up"
	}
	return ipCmd("link", "set", hostVeth(n.Netns), state)
}
