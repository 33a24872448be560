package slots

import (
	"os"
	"path/filepath"

	"golang.org/x/sys/windows"
)

// osAttrs reads provenance from NTFS alternate data streams: the Mark of
// the Web is the stream "Zone.Identifier" of the downloaded file, opened
// as "<path>:Zone.Identifier".
type osAttrs struct{}

func (osAttrs) whereFroms(string) ([]byte, error) { return nil, errNoAttr }
func (osAttrs) quarantine(string) ([]byte, error) { return nil, errNoAttr }
func (osAttrs) zoneIdentifier(path string) ([]byte, error) {
	return readAttrFile(path + ":Zone.Identifier")
}

// DefaultDownloadDirs is the user's Downloads known folder (wherever the
// user moved it), else %USERPROFILE%\Downloads.
func DefaultDownloadDirs() []string {
	if p, err := windows.KnownFolderPath(windows.FOLDERID_Downloads, 0); err == nil && p != "" {
		return []string{p}
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return nil
	}
	return []string{filepath.Join(home, "Downloads")}
}
