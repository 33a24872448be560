package gate

import (
	"context"
	"fmt"

	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/notary"
)

// NotaryLookup asks a notarisation ticket service about a record
// (notary.Client: Apple's CloudKit ticket lookup).
type NotaryLookup interface {
	Lookup(ctx context.Context, recordName string) (notary.Answer, error)
}

// notaryCheck is what the online lookup said, for the evidence.
type notaryCheck struct {
	record, outcome string
}

// checkNotarisation asks the ticket service (Apple's, or the sandbox's for
// a sandbox download) about a verified macOS signature — an app's main
// executable by its cdhash, a .pkg by its TOC checksum — when one is
// configured. Its answer decides: found is notarised (even with no ticket
// stapled), not found is gate_not_notarized (even with one stapled: Apple
// no longer vouches for it). When the service does not answer, the stapled
// ticket decides, as Gatekeeper does offline. err is the verifier's (nil
// or ReasonNotNotarized); the returned one replaces it.
func (s *Service) checkNotarisation(ctx context.Context, sandbox bool, sig *codesign.Result, err error) (notaryCheck, error) {
	lookup := s.Notary
	if sandbox {
		lookup = s.SandboxNotary
	}
	dt := notary.DigestType(sig.DigestAlgorithm)
	if lookup == nil || (sig.Kind != "macho" && sig.Kind != "pkg") || len(sig.CDHashes) == 0 || dt == 0 {
		return notaryCheck{}, err
	}
	if err != nil && codesign.ReasonOf(err) != codesign.ReasonNotNotarized {
		return notaryCheck{}, err
	}
	name := notary.RecordName(dt, sig.CDHashes[0])
	a, lerr := lookup.Lookup(ctx, name)
	switch {
	case lerr != nil:
		if ctx.Err() != nil {
			return notaryCheck{}, ctx.Err()
		}
		return notaryCheck{record: name, outcome: "unavailable (the stapled ticket decides): " + lerr.Error()}, err
	case a.Found:
		sig.Notarized, sig.NotarySource = true, "online"
		return notaryCheck{record: name, outcome: "found"}, nil
	}
	sig.Notarized, sig.NotarySource = false, "online"
	return notaryCheck{record: name, outcome: "not found"},
		&codesign.Error{Reason: codesign.ReasonNotNotarized, Detail: fmt.Sprintf("Apple's ticket service has no notarisation ticket for %s (%s)", name, a.Reason)}
}
