package slots

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Extended attributes macOS attaches to downloads.
const (
	xattrWhereFroms = "com.apple.metadata:kMDItemWhereFroms"
	xattrQuarantine = "com.apple.quarantine"
)

// osAttrs reads provenance from extended attributes (getxattr(2), no cgo).
type osAttrs struct{}

func (osAttrs) whereFroms(path string) ([]byte, error) { return getxattr(path, xattrWhereFroms) }
func (osAttrs) quarantine(path string) ([]byte, error) { return getxattr(path, xattrQuarantine) }
func (osAttrs) zoneIdentifier(string) ([]byte, error)  { return nil, errNoAttr }

// getxattr reads the extended attribute name of path (following symlinks),
// at most maxAttrSize bytes.
func getxattr(path, name string) ([]byte, error) {
	for range 3 { // the value may grow between the size probe and the read
		n, err := unix.Getxattr(path, name, nil)
		if err != nil {
			return nil, xattrErr(err)
		}
		if n > maxAttrSize {
			return nil, fmt.Errorf("slots: %s of %s is %d bytes, more than %d", name, path, n, maxAttrSize)
		}
		buf := make([]byte, n)
		m, err := unix.Getxattr(path, name, buf)
		if errors.Is(err, unix.ERANGE) {
			continue
		}
		if err != nil {
			return nil, xattrErr(err)
		}
		return buf[:m], nil
	}
	return nil, fmt.Errorf("slots: %s of %s keeps changing size", name, path)
}

func xattrErr(err error) error {
	if errors.Is(err, unix.ENOATTR) || errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTSUP) {
		return errNoAttr
	}
	return fmt.Errorf("slots: getxattr: %w", err)
}

// DefaultDownloadDirs is ~/Downloads.
func DefaultDownloadDirs() []string {
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(home, "Downloads")}
}
