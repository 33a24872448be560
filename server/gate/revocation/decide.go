package revocation

import (
	"fmt"
	"time"
)

// Verdict is the rule's outcome for a chain.
type Verdict struct {
	// Fail: the signature is not accepted (gate_signature_revoked).
	Fail bool
	// Status sums the chain up: revoked when any certificate is, else
	// unknown when any could not be checked, else the leaf's (good or
	// unchecked).
	Status Status
	// Decisive is the answer the status comes from: the revoked (or
	// unknown) certificate's, else the leaf's.
	Decisive Answer
	Detail   string
}

// compromised reports whether a revocation reason says signatures made
// with the key at any time cannot be trusted: the key (or a CA's) was
// compromised, or the CA gives no reason.
func compromised(reason int) bool {
	switch reason {
	case ReasonUnspecified, ReasonKeyCompromise, ReasonCACompromise, ReasonAACompromise:
		return true
	}
	return false
}

// Decide applies the gate's revocation rule (docs/gate.md, "Revocation")
// to the answers about a signature's chain (Client.Check), signed at
// signingTime as a trusted timestamp proves (timestamped false: no proof
// of when it was signed):
//
//   - good, unchecked, unknown: pass (soft-fail: an unreachable or silent
//     responder does not reject, the evidence says so);
//   - revoked for keyCompromise, cACompromise, aACompromise or no given
//     reason (unspecified): fail, whatever the timestamp;
//   - revoked for another reason (superseded, cessationOfOperation,
//     affiliationChanged, privilegeWithdrawn, certificateHold): fail
//     unless a trusted timestamp proves the signature was made before the
//     revocation time.
func Decide(answers []Answer, signingTime time.Time, timestamped bool) Verdict {
	if len(answers) == 0 {
		return Verdict{Status: Unchecked, Decisive: Answer{Status: Unchecked, Source: SourceNone}, Detail: "no certificate of the chain was asked about"}
	}
	v := Verdict{Status: answers[0].Status, Decisive: answers[0]}
	if v.Status == Unknown || v.Status == Revoked {
		v.Status = Good // decided below
	}
	for _, a := range answers {
		switch a.Status {
		case Revoked:
			when := a.RevokedAt.UTC().Format(time.RFC3339)
			switch {
			case compromised(a.Reason):
				return Verdict{Fail: true, Status: Revoked, Decisive: a,
					Detail: fmt.Sprintf("%q was revoked (%s) at %s: no signature made with it is trusted", a.Subject, ReasonName(a.Reason), when)}
			case !timestamped:
				return Verdict{Fail: true, Status: Revoked, Decisive: a,
					Detail: fmt.Sprintf("%q was revoked (%s) at %s, and no trusted timestamp proves the signature is older", a.Subject, ReasonName(a.Reason), when)}
			case !signingTime.Before(a.RevokedAt):
				return Verdict{Fail: true, Status: Revoked, Decisive: a,
					Detail: fmt.Sprintf("%q was revoked (%s) at %s, before the signature's timestamp %s", a.Subject, ReasonName(a.Reason), when, signingTime.UTC().Format(time.RFC3339))}
			}
			// Revoked after a timestamped signature, for a reason that
			// does not say the key was misused: the signature stands.
			v.Status, v.Decisive = Revoked, a
			v.Detail = fmt.Sprintf("%q was revoked (%s) at %s, after the signature's trusted timestamp %s: the signature stands", a.Subject, ReasonName(a.Reason), when, signingTime.UTC().Format(time.RFC3339))
		case Unknown:
			if v.Status != Revoked && v.Status != Unknown {
				v.Status, v.Decisive = Unknown, a
				v.Detail = "soft-fail: " + a.Detail
			}
		}
	}
	if v.Status == Good && answers[0].Status == Unchecked {
		v.Status = Unchecked
	}
	return v
}
