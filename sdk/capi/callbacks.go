package main

/*
#define XPROMO_NO_PROTOTYPES
#include <stdlib.h>
#include "xpromo.h"

// cgo cannot call a C function pointer; these can.
static void xpromo_call_log(xpromo_log_fn fn, void *user_data, int32_t level, const char *message) {
	fn(user_data, level, message);
}
static int64_t xpromo_call_clock(xpromo_clock_fn fn, void *user_data) {
	return fn(user_data);
}
static int32_t xpromo_call_render(xpromo_render_fn fn, void *user_data, const char *ad_json) {
	return fn(user_data, ad_json);
}
*/
import "C"

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"
)

// logSink is an app's logging callback and the least level it wants.
type logSink struct {
	fn       C.xpromo_log_fn
	userData unsafe.Pointer // the app's, never dereferenced here
	min      slog.Level
}

// callbackHandler is the slog.Handler of an agent's Logger: it formats
// each record as "msg key=value ..." (slog's text form without time and
// level, which the callback gets as a number) and passes it to the sink
// current when the record is logged, so xpromo_set_logger works at any
// time.
type callbackHandler struct {
	sink *atomic.Pointer[logSink]
	ops  []func(slog.Handler) slog.Handler // WithAttrs and WithGroup, in order
}

func (h *callbackHandler) Enabled(_ context.Context, l slog.Level) bool {
	s := h.sink.Load()
	return s != nil && l >= s.min
}

func (h *callbackHandler) Handle(ctx context.Context, r slog.Record) error {
	s := h.sink.Load()
	if s == nil || r.Level < s.min {
		return nil
	}
	var buf bytes.Buffer
	var text slog.Handler = slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey) {
				return slog.Attr{}
			}
			return a
		},
	})
	for _, op := range h.ops {
		text = op(text)
	}
	if err := text.Handle(ctx, r); err != nil {
		return err
	}
	msg := C.CString(strings.TrimSuffix(buf.String(), "\n"))
	defer C.free(unsafe.Pointer(msg))
	C.xpromo_call_log(s.fn, s.userData, C.int32_t(r.Level), msg)
	return nil
}

func (h *callbackHandler) with(op func(slog.Handler) slog.Handler) *callbackHandler {
	return &callbackHandler{sink: h.sink, ops: append(h.ops[:len(h.ops):len(h.ops)], op)}
}

func (h *callbackHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithAttrs(attrs) })
}

func (h *callbackHandler) WithGroup(name string) slog.Handler {
	return h.with(func(t slog.Handler) slog.Handler { return t.WithGroup(name) })
}

// clockSource is an app's clock callback.
type clockSource struct {
	fn       C.xpromo_clock_fn
	userData unsafe.Pointer
}

// now is the agent's clock: the app's callback when it set one, else the
// system clock.
func now(c *atomic.Pointer[clockSource]) time.Time {
	if s := c.Load(); s != nil {
		return time.UnixMilli(int64(C.xpromo_call_clock(s.fn, s.userData)))
	}
	return time.Now()
}

// render calls the app's render hook with the ad's JSON and returns its
// answer.
func render(fn C.xpromo_render_fn, userData unsafe.Pointer, adJSON []byte) int32 {
	ad := C.CString(string(adJSON))
	defer C.free(unsafe.Pointer(ad))
	return int32(C.xpromo_call_render(fn, userData, ad))
}
