package codesign

import "sync"

// sync1 computes f once (key generation is the slow part of these tests).
func sync1[T any](f func() T) func() T {
	var once sync.Once
	var v T
	return func() T { once.Do(func() { v = f() }); return v }
}
