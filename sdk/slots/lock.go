package slots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrDataDirInUse is returned by New when another process (another
// instance of the app) holds the data directory: the offline queue and the
// install state have one writer.
var ErrDataDirInUse = errors.New("slots: the SDK data directory is in use by another process")

var errLocked = errors.New("locked")

// lockDataDir takes the exclusive lock of dir (the file "lock" in it) and
// returns the open lock file; closing it releases the lock.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("slots: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		if errors.Is(err, errLocked) {
			return nil, ErrDataDirInUse
		}
		return nil, fmt.Errorf("slots: lock %s: %w", dir, err)
	}
	return f, nil
}
