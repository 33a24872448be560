//go:build !darwin && !windows

package slots

// osAttrs: other systems record no download provenance the SDK reads, so
// only the local inbox channel works there (the SDK targets macOS and
// Windows; this keeps the package building and testable elsewhere).
type osAttrs struct{}

func (osAttrs) whereFroms(string) ([]byte, error)     { return nil, errNoAttr }
func (osAttrs) quarantine(string) ([]byte, error)     { return nil, errNoAttr }
func (osAttrs) zoneIdentifier(string) ([]byte, error) { return nil, errNoAttr }

// DefaultDownloadDirs is empty: nothing records provenance here.
func DefaultDownloadDirs() []string { return nil }
