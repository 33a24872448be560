package failovertest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"
)

// The stale /sync key, and its remedy. Patroni 3.0.2 (Debian 12) was seen,
// after a primary frozen past the leader key's ttl, to leave its /sync key
// naming another node as the leader ({"leader":"pg2","sync_standby":null},
// written by the standby that began to take over while the primary was
// stopped) while the woken primary kept the leader key. The leader then
// refuses to rewrite a key that names someone else ("Synchronous
// replication key updated by someone else", every loop), /cluster names
// no sync standby, and, strict mode promoting only the standby the key
// names, no failover can happen until the key is fixed. PostgreSQL itself
// replicates synchronously all along (Patroni set synchronous_standby_names
// before the freeze), so no acknowledged commit is at risk; availability is.
//
// The remedy: delete the key, compare-and-delete at the revision read (so
// a key Patroni rewrote meanwhile is left alone). A missing /sync key is
// one the leader writes afresh at its next loop (it names itself and its
// standby); while it is missing no standby can be promoted, which is what
// the stale key already meant.

const syncKeyRepairAfter = 25 * time.Second // past two loop_waits

// syncKey is Patroni's /sync key in etcd, read through etcd's v3 JSON
// gateway.
type syncKey struct {
	Leader      string  `json:"leader"`
	SyncStandby *string `json:"sync_standby"`
	revision    string
}

func (c *Cluster) syncKeyName() string { return "/service/xpromo-failover/sync" }

func (c *Cluster) etcdPost(ctx context.Context, path string, body any, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	url := fmt.Sprintf("http://%s:%d/v3/%s", c.etcdHost(), c.cfg.BasePort+etcdClientOffset, path)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(b))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("etcd %s: %s", path, resp.Status)
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(out)
}

// readSyncKey returns the key, nil when there is none.
func (c *Cluster) readSyncKey(ctx context.Context) (*syncKey, error) {
	key := base64.StdEncoding.EncodeToString([]byte(c.syncKeyName()))
	var out struct {
		Kvs []struct {
			Value       string `json:"value"`
			ModRevision string `json:"mod_revision"`
		} `json:"kvs"`
	}
	if err := c.etcdPost(ctx, "kv/range", map[string]string{"key": key}, &out); err != nil {
		return nil, err
	}
	if len(out.Kvs) == 0 {
		return nil, nil
	}
	raw, err := base64.StdEncoding.DecodeString(out.Kvs[0].Value)
	if err != nil {
		return nil, err
	}
	k := &syncKey{revision: out.Kvs[0].ModRevision}
	if err := json.Unmarshal(raw, k); err != nil {
		return nil, fmt.Errorf("the /sync key %q: %w", raw, err)
	}
	return k, nil
}

// repairSyncKey deletes the /sync key when it names a leader other than
// leader, and says what it did ("" when the key was not stale that way).
func (c *Cluster) repairSyncKey(ctx context.Context, leader *Node) (string, error) {
	if c.cfg.DCS != DCSEtcd3 {
		return "", nil // the v2 store is not the v3 gateway's
	}
	k, err := c.readSyncKey(ctx)
	if err != nil || k == nil || !staleSyncKey(k, leader.Name) {
		return "", err
	}
	key := base64.StdEncoding.EncodeToString([]byte(c.syncKeyName()))
	var out struct {
		Succeeded bool `json:"succeeded"`
	}
	txn := map[string]any{
		"compare": []map[string]any{{"key": key, "target": "MOD", "result": "EQUAL", "mod_revision": k.revision}},
		"success": []map[string]any{{"request_delete_range": map[string]string{"key": key}}},
	}
	if err := c.etcdPost(ctx, "kv/txn", txn, &out); err != nil {
		return "", err
	}
	if !out.Succeeded {
		return "", nil // rewritten meanwhile: look again next time
	}
	return fmt.Sprintf("Patroni's /sync key named %s as the leader (sync standby %s) while %s held the leader key, and %s's Patroni would not rewrite it: deleted it (compare-and-delete at revision %s)",
		k.Leader, orNone(deref(k.SyncStandby)), leader.Name, leader.Name, k.revision), nil
}

// staleSyncKey: the key names a leader other than the one holding the
// leader key.
func staleSyncKey(k *syncKey, leader string) bool { return k.Leader != "" && k.Leader != leader }

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
