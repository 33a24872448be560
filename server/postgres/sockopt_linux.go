package postgres

import (
	"syscall"
	"time"
)

// setUserTimeout sets TCP_USER_TIMEOUT (Linux) on a socket.
func setUserTimeout(fd uintptr, d time.Duration) error {
	return syscall.SetsockoptInt(int(fd), syscall.IPPROTO_TCP, 0x12 /* TCP_USER_TIMEOUT */, int(d.Milliseconds()))
}
