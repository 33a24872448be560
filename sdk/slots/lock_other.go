//go:build !unix && !windows

package slots

import "os"

// lockFile is a no-op where there is no advisory locking.
func lockFile(*os.File) error { return nil }
