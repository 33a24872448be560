package gate

import (
	"context"
	"crypto/x509"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/gate/codesign"
	"github.com/xpromo/xpromo/server/gate/revocation"
)

// ReasonSignatureRevoked: the signature verifies, but a certificate of its
// chain is revoked, and the revocation rule (docs/gate.md, "Revocation")
// says the signature is not trusted: revoked for key compromise or no
// given reason, or for another reason with no trusted timestamp older than
// the revocation.
const ReasonSignatureRevoked = apperr.GateSignatureRevoked

// RevocationChecker asks OCSP responders and CRL distribution points about
// a chain (revocation.Client).
type RevocationChecker interface {
	Check(ctx context.Context, chain []*x509.Certificate) []revocation.Answer
}

// checkRevocation asks about the verified signature's chain (the server's
// checker, or the sandbox's for a sandbox download) and applies the rule.
// No checker (--gate-revocation=off) is "unchecked", which passes. The
// evidence keys are set on ev.
func (s *Service) checkRevocation(ctx context.Context, sandbox bool, sig *codesign.Result, ev *SignatureEvidence) revocation.Verdict {
	checker := s.Revocation
	if sandbox {
		checker = s.SandboxRevocation
	}
	var v revocation.Verdict
	switch {
	case checker == nil:
		v = revocation.Verdict{Status: revocation.Unchecked, Decisive: revocation.Answer{Source: revocation.SourceNone}, Detail: "revocation checking is off"}
	default:
		answers := checker.Check(ctx, sig.Chain)
		// A .dmg's own signature by another certificate than the app's:
		// its chain counts too.
		if im := sig.Image; im != nil && im.Signer != nil && sig.Signer != nil && !im.Signer.Equal(sig.Signer) {
			answers = append(answers, checker.Check(ctx, im.Chain)...)
		}
		v = revocation.Decide(answers, sig.SigningTime, sig.Timestamped)
	}
	ev.RevocationStatus = string(v.Status)
	ev.RevocationSource = v.Decisive.Source
	ev.RevocationURL = v.Decisive.URL
	ev.RevocationDetail = v.Detail
	if v.Decisive.Status == revocation.Revoked {
		at := v.Decisive.RevokedAt.UTC()
		ev.RevocationReason, ev.RevokedAt = revocation.ReasonName(v.Decisive.Reason), &at
	}
	return v
}
