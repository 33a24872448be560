// Command capi is the C ABI of the xpromo in-app SDK (sdk/slots), declared
// by xpromo.h: built with -buildmode=c-shared (libxpromo.so, xpromo.dll,
// libxpromo.dylib) or -buildmode=c-archive (libxpromo.a) for apps written
// in Swift, Objective-C, C#, C++ or C. docs/capi.md is the guide.
//
// Every export defers guard first, so that no Go panic crosses into C, and
// hands back only C-allocated memory the app frees with xpromo_string_free
// or xpromo_error_free. Values the app passes are handles (handles.go),
// UTF-8 strings and JSON.
package main

/*
#define XPROMO_NO_PROTOTYPES
#include <stdlib.h>
#include "xpromo.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// abiVersion is XPROMO_ABI_VERSION_MAJOR.MINOR, and the patch level.
const abiVersion = "1.0.0"

func main() {} // required by -buildmode=c-shared and c-archive; never runs

// agent is what an xpromo_agent handle holds.
type agent struct {
	sdk         *slots.Agent
	sendTimeout time.Duration
	log         atomic.Pointer[logSink]
	clock       atomic.Pointer[clockSource]

	mu   sync.Mutex // guards stop and done, the background work
	stop context.CancelFunc
	done chan struct{}
}

// placement is what an xpromo_placement handle holds.
type placement struct {
	p     *slots.Placement
	owner *agent
}

// ad is the JSON of a slots.Ad.
type ad struct {
	Slot            string    `json:"slot"`
	Title           string    `json:"title"`
	IconURL         string    `json:"icon_url"`
	Description     string    `json:"description"`
	CTA             string    `json:"cta"`
	SponsoredLabel  string    `json:"sponsored_label"`
	AdvertiserAppID string    `json:"advertiser_app_id"`
	ExpiresAt       time.Time `json:"expires_at"`
}

func adOf(a slots.Ad) ad {
	return ad{
		Slot: string(a.Slot), Title: a.Title, IconURL: a.IconURL, Description: a.Description,
		CTA: a.CTA, SponsoredLabel: a.SponsoredLabel, AdvertiserAppID: a.AdvertiserAppID,
		ExpiresAt: a.ExpiresAt.UTC(),
	}
}

// noFill is the JSON answer of a fill that got nothing.
type noFill struct {
	Filled       bool   `json:"filled"`
	NoFillReason string `json:"no_fill_reason"`
}

// showResult is xpromo_show's JSON answer for a filled slot.
type showResult struct {
	Filled      bool   `json:"filled"`
	Outcome     string `json:"outcome"`
	Ad          ad     `json:"ad"`
	DownloadURL string `json:"download_url,omitempty"`
}

// goString reads a string argument, which must not be NULL.
func goString(p *C.char, name string) (string, error) {
	if p == nil {
		return "", invalidArgument("%s is NULL", name)
	}
	return C.GoString(p), nil
}

// setString stores s, C-allocated, in *out when out is not NULL.
func setString(out **C.char, s string) {
	if out != nil {
		*out = C.CString(s)
	}
}

// setJSON stores v as JSON in *out when out is not NULL.
func setJSON(out **C.char, v any) error {
	if out == nil {
		return nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	*out = C.CString(string(b))
	return nil
}

func clearString(out **C.char) {
	if out != nil {
		*out = nil
	}
}

func agentOf(h C.xpromo_agent) (*agent, error) {
	a, ok := lookup[*agent](uint64(h))
	if !ok {
		return nil, errBadHandle
	}
	return a, nil
}

func validSlot(s string) (xpromo.Slot, error) {
	slot := xpromo.Slot(s)
	if !slot.Valid() {
		return "", invalidArgument("unknown slot %q", s)
	}
	return slot, nil
}

var version = C.CString(abiVersion + " (" + runtime.Version() + ")") // static, never freed

//export xpromo_version
func xpromo_version() *C.char { return version }

//export xpromo_agent_new
func xpromo_agent_new(configJSON *C.char, out *C.xpromo_agent, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	if out == nil {
		return fail(errOut, invalidArgument("out is NULL"))
	}
	*out = 0
	raw, err := goString(configJSON, "config_json")
	if err != nil {
		return fail(errOut, err)
	}
	cfg, err := parseConfig([]byte(raw))
	if err != nil {
		return fail(errOut, err)
	}
	a := &agent{sendTimeout: cfg.SendTimeout}
	cfg.Now = func() time.Time { return now(&a.clock) }
	cfg.Logger = slog.New(&callbackHandler{sink: &a.log})
	if a.sdk, err = slots.New(cfg); err != nil {
		return fail(errOut, err)
	}
	*out = C.xpromo_agent(newHandle(a))
	return C.XPROMO_OK
}

//export xpromo_agent_free
func xpromo_agent_free(h C.xpromo_agent, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, ok := release[*agent](uint64(h))
	if !ok {
		return fail(errOut, errBadHandle)
	}
	releaseWhere(func(p *placement) bool { return p.owner == a })
	a.mu.Lock()
	if a.stop != nil {
		a.stop()
		<-a.done
	}
	a.mu.Unlock()
	return fail(errOut, a.sdk.Close())
}

//export xpromo_set_logger
func xpromo_set_logger(h C.xpromo_agent, fn C.xpromo_log_fn, userData unsafe.Pointer, minLevel C.int32_t, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if fn == nil {
		a.log.Store(nil)
	} else {
		a.log.Store(&logSink{fn: fn, userData: userData, min: slog.Level(minLevel)})
	}
	return C.XPROMO_OK
}

//export xpromo_set_clock
func xpromo_set_clock(h C.xpromo_agent, fn C.xpromo_clock_fn, userData unsafe.Pointer, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if fn == nil {
		a.clock.Store(nil)
	} else {
		a.clock.Store(&clockSource{fn: fn, userData: userData})
	}
	return C.XPROMO_OK
}

//export xpromo_agent_start
func xpromo_agent_start(h C.xpromo_agent, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.stop == nil {
		ctx, stop := context.WithCancel(context.Background())
		a.stop, a.done = stop, make(chan struct{})
		go func() {
			defer close(a.done)
			a.sdk.Run(ctx)
		}()
	}
	return C.XPROMO_OK
}

//export xpromo_device_id
func xpromo_device_id(h C.xpromo_agent, out **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(out)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if out == nil {
		return fail(errOut, invalidArgument("out is NULL"))
	}
	setString(out, a.sdk.DeviceID())
	return C.XPROMO_OK
}

//export xpromo_fill
func xpromo_fill(h C.xpromo_agent, slotName *C.char, out *C.xpromo_placement, adJSON **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(adJSON)
	if out == nil {
		return fail(errOut, invalidArgument("placement is NULL"))
	}
	*out = 0
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	p, err := a.fill(slotName)
	if nf, ok := err.(*slots.NoFillError); ok {
		if err := setJSON(adJSON, noFill{NoFillReason: string(nf.Reason)}); err != nil {
			return fail(errOut, err)
		}
	}
	if err != nil {
		return fail(errOut, err)
	}
	if err := setJSON(adJSON, adOf(p.Ad)); err != nil {
		return fail(errOut, err)
	}
	*out = C.xpromo_placement(newHandle(&placement{p: p, owner: a}))
	return C.XPROMO_OK
}

// fill asks for an ad for the slot named by the C string, within the send
// timeout. No fill is a *slots.NoFillError.
func (a *agent) fill(slotName *C.char) (*slots.Placement, error) {
	s, err := goString(slotName, "slot")
	if err != nil {
		return nil, err
	}
	slot, err := validSlot(s)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.sendTimeout)
	defer cancel()
	return a.sdk.Fill(ctx, slot)
}

//export xpromo_placement_click
func xpromo_placement_click(h C.xpromo_placement, downloadURL **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(downloadURL)
	p, ok := lookup[*placement](uint64(h))
	if !ok {
		return fail(errOut, errBadHandle)
	}
	if downloadURL == nil {
		return fail(errOut, invalidArgument("download_url is NULL"))
	}
	u, err := p.p.Click(context.Background())
	if err != nil {
		return fail(errOut, err)
	}
	setString(downloadURL, u)
	return C.XPROMO_OK
}

//export xpromo_placement_free
func xpromo_placement_free(h C.xpromo_placement, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	if _, ok := release[*placement](uint64(h)); !ok {
		return fail(errOut, errBadHandle)
	}
	return C.XPROMO_OK
}

//export xpromo_show
func xpromo_show(h C.xpromo_agent, slotName *C.char, renderFn C.xpromo_render_fn, userData unsafe.Pointer, resultJSON **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(resultJSON)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if renderFn == nil {
		return fail(errOut, invalidArgument("render is NULL"))
	}
	p, err := a.fill(slotName)
	if nf, ok := err.(*slots.NoFillError); ok {
		if err := setJSON(resultJSON, noFill{NoFillReason: string(nf.Reason)}); err != nil {
			return fail(errOut, err)
		}
	}
	if err != nil {
		return fail(errOut, err)
	}
	res := showResult{Filled: true, Ad: adOf(p.Ad)}
	b, err := json.Marshal(res.Ad)
	if err != nil {
		return fail(errOut, err)
	}
	outcome := slots.Outcome(render(renderFn, userData, b))
	switch outcome {
	case slots.NotShown, slots.Dismissed:
	case slots.Clicked:
		if res.DownloadURL, err = p.Click(context.Background()); err != nil {
			return fail(errOut, err)
		}
	default:
		return fail(errOut, errRender)
	}
	res.Outcome = outcome.String()
	return fail(errOut, setJSON(resultJSON, res))
}

//export xpromo_claim_install
func xpromo_claim_install(h C.xpromo_agent, stateJSON **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(stateJSON)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	s, err := a.sdk.ClaimInstall(context.Background())
	if err != nil {
		return fail(errOut, err)
	}
	return fail(errOut, setJSON(stateJSON, s))
}

//export xpromo_install_state
func xpromo_install_state(h C.xpromo_agent, stateJSON **C.char, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	clearString(stateJSON)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if stateJSON == nil {
		return fail(errOut, invalidArgument("state_json is NULL"))
	}
	return fail(errOut, setJSON(stateJSON, a.sdk.Install()))
}

//export xpromo_heartbeat
func xpromo_heartbeat(h C.xpromo_agent, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	return fail(errOut, a.sdk.Heartbeat(context.Background()))
}

//export xpromo_flush
func xpromo_flush(h C.xpromo_agent, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), a.sendTimeout)
	defer cancel()
	return fail(errOut, a.sdk.Flush(ctx))
}

//export xpromo_queue_length
func xpromo_queue_length(h C.xpromo_agent, out *C.int64_t, errOut **C.xpromo_error) (status C.xpromo_status) {
	begin(errOut)
	defer guard(&status, errOut)
	if out != nil {
		*out = 0
	}
	a, err := agentOf(h)
	if err != nil {
		return fail(errOut, err)
	}
	if out == nil {
		return fail(errOut, invalidArgument("out is NULL"))
	}
	*out = C.int64_t(a.sdk.Queue().Len())
	return C.XPROMO_OK
}
