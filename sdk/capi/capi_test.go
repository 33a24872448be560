//go:build cgo

package main

import (
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The C error-path tests (test/capi_test.c, make capi-test) call every
// export through the real ABI; these cover the Go side's decisions in
// isolation, under go test -race.

func TestGuardTurnsAPanicIntoInternal(t *testing.T) {
	status := xpromo_heartbeat(0, nil) // a bad handle; the value is overwritten below
	func() {
		defer guard(&status, nil)
		panic("a bug")
	}()
	if status != -99 {
		t.Fatalf("status after a panic = %d, want XPROMO_ERR_INTERNAL (-99)", status)
	}
}

func TestClassify(t *testing.T) {
	opErr := &net.OpError{Op: "dial", Net: "tcp", Err: errors.New("connection refused")}
	for _, tc := range []struct {
		err    error
		status int
		code   string
		http   int
	}{
		{invalidArgument("x"), -1, "invalid_argument", 0},
		{errBadHandle, -2, "bad_handle", 0},
		{fmt.Errorf("wrapped: %w", &xpromo.Error{Status: 403, Code: "fraud_bad_signature"}), -3, "fraud_bad_signature", 403},
		{&xpromo.Error{Status: 409, Code: "budget_exhausted"}, -3, "budget_exhausted", 409},
		{&xpromo.Error{Status: 503, Code: "unavailable"}, -4, "unavailable", 503},
		{&xpromo.Error{Status: 429, Code: "rate_limited"}, -4, "rate_limited", 429},
		{fmt.Errorf("slots: sending click event 1: %w", opErr), -4, "network", 0},
		{&slots.NoFillError{Reason: xpromo.NoFillNoCampaign}, 1, "no_eligible_campaign", 0},
		{slots.ErrOfferExpired, -5, "offer_expired", 0},
		{slots.ErrNoChain, -6, "no_chain", 0},
		{slots.ErrDataDirInUse, -7, "data_dir_in_use", 0},
		{slots.ErrQueueFull, -8, "queue_full", 0},
		{errRender, -9, "render_failed", 0},
		{errors.New("disk full"), -10, "failed", 0},
	} {
		status, code, http := classify(tc.err)
		if int(status) != tc.status || code != tc.code || http != tc.http {
			t.Errorf("classify(%v) = %d %q %d, want %d %q %d", tc.err, status, code, http, tc.status, tc.code, tc.http)
		}
	}
}

func TestParseConfig(t *testing.T) {
	key, err := attribution.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	pem, err := attribution.MarshalPrivateKey(key.Private)
	if err != nil {
		t.Fatal(err)
	}
	pemJSON := strings.ReplaceAll(string(pem), "\n", `\n`)
	base := `"base_url":"http://127.0.0.1:1","app_id":"app_1","sdk_key_pem":"` + pemJSON + `","data_dir":"/tmp/d"`

	cfg, err := parseConfig([]byte(`{` + base + `,"download_dirs":[],"send_timeout_ms":1500,"heartbeat_every_ms":60000,"platform":"win","locale":"de-CH"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Key.ID != key.ID || cfg.DownloadDirs == nil || len(cfg.DownloadDirs) != 0 ||
		cfg.SendTimeout.Milliseconds() != 1500 || cfg.HeartbeatEvery.Seconds() != 60 || cfg.Platform != xpromo.PlatformWin || cfg.Locale != "de-CH" {
		t.Errorf("parsed %+v", cfg)
	}
	cfg, err = parseConfig([]byte(`{` + base + `}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.DownloadDirs != nil || cfg.SendTimeout != slots.DefaultSendTimeout {
		t.Errorf("defaults: download dirs %v (want nil: the user's Downloads), send timeout %s", cfg.DownloadDirs, cfg.SendTimeout)
	}

	for _, bad := range []string{
		``, `{`, `[]`, `null x`, `{"bogus":1}`, `{}`,
		`{` + base + `} {}`,
		`{` + strings.Replace(base, `"app_1"`, `"app 1"`, 1) + `}`,
		`{` + strings.Replace(base, pemJSON, "not a key", 1) + `}`,
		`{` + base + `,"platform":"linux"}`,
		`{` + base + `,"locale":"` + strings.Repeat("x", 40) + `"}`,
		`{` + base + `,"send_timeout_ms":-1}`,
		`{` + base + `,"send_timeout_ms":600001}`,
		`{` + base + `,"heartbeat_every_ms":86400001}`,
		`{"app_id":"app_1","sdk_key_pem":"x","data_dir":"d"}`,
		`{"base_url":"http://x","sdk_key_pem":"x","data_dir":"d"}`,
		`{"base_url":"http://x","app_id":"app_1","data_dir":"d"}`,
		`{"base_url":"http://x","app_id":"app_1","sdk_key_pem":"x"}`,
	} {
		_, err := parseConfig([]byte(bad))
		if status, _, _ := classify(err); err == nil || status != -1 {
			t.Errorf("parseConfig(%.60q) = %v, want an invalid argument", bad, err)
		}
	}
}

func TestHandles(t *testing.T) {
	a, p := &agent{}, &placement{}
	ha, hp := newHandle(a), newHandle(&placement{owner: a})
	hq := newHandle(p)
	if ha == 0 || ha == hp {
		t.Fatalf("handles %d %d", ha, hp)
	}
	if _, ok := lookup[*placement](ha); ok {
		t.Error("an agent's handle looked up as a placement")
	}
	releaseWhere(func(p *placement) bool { return p.owner == a })
	if _, ok := lookup[*placement](hp); ok {
		t.Error("the agent's placement outlived releaseWhere")
	}
	if got, ok := release[*placement](hq); !ok || got != p {
		t.Error("another placement was released")
	}
	if _, ok := release[*agent](ha); !ok {
		t.Error("release of the agent")
	}
	if _, ok := release[*agent](ha); ok {
		t.Error("a handle released twice")
	}
	if h := newHandle(a); h <= hq {
		t.Errorf("handle %d reused", h)
	}
}
