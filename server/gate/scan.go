package gate

import (
	"context"
	"fmt"

	"github.com/xpromo/xpromo/server/gate/clamav"
)

// ClamdScanner is the real Scanner: it streams the download to clamd
// (INSTREAM) through a clamav.Client.
type ClamdScanner struct{ Client *clamav.Client }

// Scan streams d's file to clamd. An error means the scan did not happen
// (clamav.ReasonFor maps it); a clean or infected verdict is the Result.
func (s ClamdScanner) Scan(ctx context.Context, d *Download) (clamav.Result, error) {
	f, err := d.Open()
	if err != nil {
		return clamav.Result{}, fmt.Errorf("gate: opening the download to scan: %w", err)
	}
	defer f.Close()
	return s.Client.Scan(ctx, f)
}
