package payments

import (
	"context"
	"encoding/json"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/apps"
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
// Each call is a new correction: retries are made safe by the API's
// Idempotency-Key, not here.
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
	id := ids.New("adj")
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
