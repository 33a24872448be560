//go:build !linux

package postgres

import "time"

// setUserTimeout does nothing where TCP_USER_TIMEOUT does not exist; the
// keepalives and the request deadlines still bound a dead connection.
func setUserTimeout(uintptr, time.Duration) error { return nil }
