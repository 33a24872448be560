//go:build cgo

package main

import "sync"

// handles maps the integers C holds (xpromo_agent, xpromo_placement) to Go
// values. Not runtime/cgo.Handle: its Value panics on an unknown or freed
// handle and cannot say that a placement was passed for an agent, while
// here either is an ordinary XPROMO_ERR_BAD_HANDLE. Handles are never
// reused, so a stale one stays bad.
var handles = struct {
	mu   sync.Mutex
	next uint64
	m    map[uint64]any
}{m: map[uint64]any{}}

// newHandle registers v and returns its handle (never 0).
func newHandle(v any) uint64 {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	handles.next++
	handles.m[handles.next] = v
	return handles.next
}

// lookup returns the value of h if it is registered and a T.
func lookup[T any](h uint64) (T, bool) {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	v, ok := handles.m[h].(T)
	return v, ok
}

// release unregisters h if it is registered and a T, and returns its value.
func release[T any](h uint64) (T, bool) {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	v, ok := handles.m[h].(T)
	if ok {
		delete(handles.m, h)
	}
	return v, ok
}

// releaseWhere unregisters every handle whose value is a T matching f.
func releaseWhere[T any](f func(T) bool) {
	handles.mu.Lock()
	defer handles.mu.Unlock()
	for h, v := range handles.m {
		if t, ok := v.(T); ok && f(t) {
			delete(handles.m, h)
		}
	}
}
