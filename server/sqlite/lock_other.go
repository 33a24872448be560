//go:build !unix

package sqlite

import (
	"errors"
	"os"
)

// lockFile is not implemented off Unix: HoldInstance fails, and the server
// runs without holder detection (abandoned claims wait out their lease).
func lockFile(string) (*os.File, error) {
	return nil, errors.New("sqlite: holding the database file needs flock (Unix)")
}
