package main

/*
#define XPROMO_NO_PROTOTYPES
#include <stdlib.h>
#include "xpromo.h"
*/
import "C"

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime/debug"
	"unsafe"

	"github.com/xpromo/xpromo/sdk/slots"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// statusError is an error of this package's own, with its status and code.
type statusError struct {
	status C.xpromo_status
	code   string
	msg    string
}

func (e *statusError) Error() string { return e.msg }

func invalidArgument(format string, args ...any) error {
	return &statusError{C.XPROMO_ERR_INVALID_ARGUMENT, "invalid_argument", "xpromo: " + fmt.Sprintf(format, args...)}
}

var errBadHandle = &statusError{C.XPROMO_ERR_BAD_HANDLE, "bad_handle", "xpromo: unknown or freed handle, or a handle of the other kind"}

var errRender = &statusError{C.XPROMO_ERR_RENDER, "render_failed", "xpromo: the render callback returned no XPROMO_OUTCOME_* value"}

// classify maps err to the status a call returns, the stable code and the
// HTTP status of the server's answer (0 when there was none).
func classify(err error) (C.xpromo_status, string, int) {
	var se *statusError
	var nf *slots.NoFillError
	var ae *xpromo.Error
	var ne net.Error
	switch {
	case errors.As(err, &se):
		return se.status, se.code, 0
	case errors.As(err, &nf):
		reason := string(nf.Reason)
		if reason == "" {
			reason = "no_fill"
		}
		return C.XPROMO_NO_FILL, reason, 0
	case errors.Is(err, slots.ErrOfferExpired):
		return C.XPROMO_ERR_OFFER_EXPIRED, "offer_expired", 0
	case errors.Is(err, slots.ErrNoChain):
		return C.XPROMO_ERR_NO_CHAIN, "no_chain", 0
	case errors.Is(err, slots.ErrDataDirInUse):
		return C.XPROMO_ERR_DATA_DIR_IN_USE, "data_dir_in_use", 0
	case errors.Is(err, slots.ErrQueueFull):
		return C.XPROMO_ERR_QUEUE_FULL, "queue_full", 0
	case errors.As(err, &ae):
		// A 429 or 5xx still failing after the client's retries is no
		// final answer: the events stay queued, as when offline.
		if slots.DefaultRetryable(ae) {
			return C.XPROMO_ERR_NETWORK, ae.Code, ae.Status
		}
		return C.XPROMO_ERR_SERVER, ae.Code, ae.Status
	case errors.As(err, &ne), errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return C.XPROMO_ERR_NETWORK, "network", 0
	}
	return C.XPROMO_ERR_FAILED, "failed", 0
}

// fail returns err's status and, when out is not NULL, stores its details
// in *out. A nil err is XPROMO_OK.
func fail(out **C.xpromo_error, err error) C.xpromo_status {
	if err == nil {
		return C.XPROMO_OK
	}
	status, code, httpStatus := classify(err)
	if out != nil {
		e := (*C.xpromo_error)(C.malloc(C.sizeof_xpromo_error))
		e.status = status
		e.http_status = C.int32_t(httpStatus)
		e.code = C.CString(code)
		e.message = C.CString(err.Error())
		*out = e
	}
	return status
}

// guard is deferred first by every export: it clears *out on entry
// (returned by begin) and turns a panic into XPROMO_ERR_INTERNAL, so that
// no Go panic unwinds into C.
func guard(status *C.xpromo_status, out **C.xpromo_error) {
	if r := recover(); r != nil {
		*status = fail(out, &statusError{C.XPROMO_ERR_INTERNAL, "internal",
			fmt.Sprintf("xpromo: internal error (please report it): %v\n%s", r, debug.Stack())})
	}
}

// begin clears the error out parameter: callers may free it unconditionally.
func begin(out **C.xpromo_error) {
	if out != nil {
		*out = nil
	}
}

//export xpromo_error_free
func xpromo_error_free(e *C.xpromo_error) {
	if e == nil {
		return
	}
	C.free(unsafe.Pointer(e.code))
	C.free(unsafe.Pointer(e.message))
	C.free(unsafe.Pointer(e))
}

//export xpromo_string_free
func xpromo_string_free(s *C.char) {
	C.free(unsafe.Pointer(s))
}
