package payments

import (
	"context"
	"encoding/hex"
	"encoding/json"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
	"github.com/xpromo/xpromo/server/idempotency"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
)

// MaxAdjustmentCents bounds one operator correction (either sign): a typo
// of a few zeros is refused instead of posted.
const MaxAdjustmentCents = MaxTopUpCents

// Adjust posts an operator's correction of an app's wallet (decisions §3):
// an `adjustment` line of amountCents (positive credits the wallet) with a
// mandatory note, and an `app.adjustment` entry in the operators' audit log,
// in one transaction. A debit never takes the wallet below zero
// (insufficient_funds). It returns the wallet's new line.
//
// Each call is a new correction, unless it runs under an Idempotency-Key
// (idempotency.RefFrom): the adjustment's id, and so its ledger key
// "adjustment:<id>", then derive from the request the key names
// (idempotency.Ref.ID), and every run of that request posts the same
// operation, which the ledger applies once. The API's unit of work already
// commits the line with the stored answer; this keeps Adjust exactly-once
// even where it runs outside that unit. A run that finds its line posted
// returns it, without a second audit entry.
func (s *Service) Adjust(ctx context.Context, appID string, amountCents int64, note string) (ledger.Line, error) {
	switch {
	case amountCents == 0 || amountCents > MaxAdjustmentCents || amountCents < -MaxAdjustmentCents:
		e := apperr.New(apperr.InvalidAmount, "amount_cents must be a non-zero integer from -%d to %d", MaxAdjustmentCents, MaxAdjustmentCents)
		e.Field = "amount_cents"
		return ledger.Line{}, e
	case note == "":
		e := apperr.New(apperr.MissingField, "note is required: it says why the wallet is corrected and appears on the ledger line")
		e.Field = "note"
		return ledger.Line{}, e
	case len(note) > 500:
		e := apperr.New(apperr.InvalidNote, "note must be at most 500 bytes")
		e.Field = "note"
		return ledger.Line{}, e
	}
	var line ledger.Line
	id := adjustmentID(ctx)
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		if _, ok, err := tx.GetApp(ctx, appID, false); err != nil {
			return err
		} else if !ok {
			return apperr.New(apperr.NotFound, "app not found")
		}
		op, err := ledger.Adjustment("adjustment:"+id, appID, amountCents, note)
		if err != nil {
			return err
		}
		now := s.now()
		results, errs, err := ledger.Apply(ctx, tx, now, []ledger.Operation{op})
		if err != nil {
			return err
		}
		if errs[0] != nil {
			return errs[0]
		}
		line, _ = results[0].Line(ledger.Wallet(appID))
		if results[0].Replayed {
			return nil // posted and audited by an earlier run of the request
		}
		detail, err := json.Marshal(map[string]any{"adjustment_id": id, "amount_cents": amountCents, "note": note, "line_id": line.ID})
		if err != nil {
			return err
		}
		return tx.InsertAdminAudit(ctx, apps.AuditEntry{
			ID: ids.New("aud"), Actor: apps.ActorAdmin, Action: "app.adjustment", Subject: appID, Detail: detail, At: now,
		})
	})
	return line, err
}

// adjustmentID is the id of the adjustment a request makes: derived from
// its Idempotency-Key when it has one, else fresh.
func adjustmentID(ctx context.Context) string {
	if ref, ok := idempotency.RefFrom(ctx); ok {
		seed, err := hex.DecodeString(ref.ID())
		if err == nil {
			return ids.Derived("adj", seed)
		}
	}
	return ids.New("adj")
}
