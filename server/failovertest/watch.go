package failovertest

import (
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/xpromo/xpromo/server/crashtest"
)

// watcher sees every answer the xpromo instances give the load's clients
// (crashtest.Config.Observe): what they saw by cycle, status and code;
// the answers that break the contract; and each instance's first
// answered write after each fault.
type watcher struct {
	instances int

	mu      sync.Mutex
	cycle   int                     // the fault in progress or last made (0: none yet)
	at      time.Time               // when it came
	first   map[int][]time.Duration // cycle → per instance: fault to the answer of the first write sent after it and answered
	seen    map[int]map[string]int  // cycle → "503 unavailable" → count
	bad     []string                // answers against the contract
	written int                     // answered writes in all
}

func newWatcher(instances int) *watcher {
	return &watcher{instances: instances, first: map[int][]time.Duration{}, seen: map[int]map[string]int{}}
}

// mark starts the window of cycle's fault.
func (w *watcher) mark(cycle int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.cycle, w.at = cycle, time.Now()
	w.first[cycle] = make([]time.Duration, w.instances)
	w.seen[cycle] = map[string]int{}
}

func (w *watcher) writes() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.written
}

// maxBad bounds the list of contract breaches kept (each is counted).
const maxBad = 50

func (w *watcher) observe(r crashtest.Response) {
	w.mu.Lock()
	defer w.mu.Unlock()
	ok := r.Err == "" && r.Status >= 200 && r.Status < 300
	if ok && r.Method == http.MethodPost {
		w.written++
		if w.cycle > 0 && r.Sent.After(w.at) {
			if f := w.first[w.cycle]; f[r.Instance] == 0 {
				f[r.Instance] = r.At.Sub(w.at)
			}
		}
	}
	if ok {
		return
	}
	key := fmt.Sprintf("%d %s", r.Status, r.Code)
	if r.Err != "" {
		key = "no answer"
	}
	if s := w.seen[w.cycle]; s != nil {
		s[key]++
	} else {
		w.seen[w.cycle] = map[string]int{key: 1}
	}
	// The contract during a failover: a 5xx is only ever 503 with
	// Retry-After; a 409 that says to come back carries Retry-After; the
	// instances never fail to answer (they keep running).
	var why string
	switch {
	case r.Err != "":
		why = "no answer: " + r.Err
	case r.Status >= 500 && r.Status != http.StatusServiceUnavailable:
		why = "a 5xx other than 503"
	case r.Status == http.StatusServiceUnavailable && !r.RetryAfter:
		why = "503 without Retry-After"
	case r.Status == http.StatusConflict && r.Code == "idempotency_key_in_use" && !r.RetryAfter:
		why = "409 idempotency_key_in_use without Retry-After"
	}
	if why != "" {
		w.bad = append(w.bad, fmt.Sprintf("cycle %d, instance %d: %s %s answered %d %s (%s)", w.cycle, r.Instance+1, r.Method, r.Path, r.Status, r.Code, why))
	}
}

// breaches are the answers against the contract.
func (w *watcher) breaches() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.bad...)
}

// seenIn is what clients saw (other than 2xx) from cycle's fault to the
// next, sorted by count.
func (w *watcher) seenIn(cycle int) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return tally(w.seen[cycle])
}

func tally(m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s ×%d", k, m[k])
	}
	return out
}

func (w *watcher) firstWrites(cycle int) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]time.Duration(nil), w.first[cycle]...)
}
