package payments

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/sdk/x402"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ids"
	"github.com/xpromo/xpromo/server/ledger"
	"github.com/xpromo/xpromo/server/txunit"
	serverx402 "github.com/xpromo/xpromo/server/x402"
)

// X402Facilitator verifies and settles x402 payments (server/x402's
// Facilitator over HTTP). A definitive answer has a nil error; any error
// means the outcome is unknown (for Settle: the transfer may have landed).
type X402Facilitator interface {
	Verify(ctx context.Context, p x402.PaymentPayload, q x402.Requirements) (x402.VerifyResponse, error)
	Settle(ctx context.Context, p x402.PaymentPayload, q x402.Requirements) (x402.SettleResponse, error)
}

// X402Chain reads the token's authorization registry (server/x402's Chain
// over JSON-RPC): whether (from, nonce) was used, and by which transaction
// ("" when it cannot find it).
type X402Chain interface {
	AuthorizationUsed(ctx context.Context, asset, from, nonce string) (used bool, tx string, err error)
}

// x402 settlement statuses. A settlement is pending from its claim until the
// facilitator (or the chain, asked by the reconciliation pass) says the
// transfer landed (settled, the wallet credited in the same transaction) or
// did not and no longer can (failed: nothing moved; the same authorization
// may be offered again while it is valid).
const (
	X402Pending = "pending"
	X402Settled = "settled"
	X402Failed  = "failed"
)

const (
	// X402Grace is how long a pending settlement is left to the request
	// that claimed it (whose facilitator call times out well within it)
	// before ReconcileX402 resolves it.
	X402Grace = time.Minute
	x402Batch = 50
	// x402Deadline: an authorization still unused this long after its
	// validBefore can never be used (the token refuses it), whatever the
	// chain's clock skew.
	x402Deadline = time.Minute
)

// X402Settlement is one x402 payment offered for a top-up, unique per
// (Network, Asset, Payer, Nonce): the token's own replay key.
type X402Settlement struct {
	ID          string // "x4s_…"; the ledger key is "topup:<ID>"
	AppID       string
	Network     string
	Asset       string // lower case
	Payer       string // authorization.from, lower case
	Nonce       string // lower case
	Value       string // atomic units
	AmountCents int64
	ValidBefore time.Time
	// Payment and Requirements are the X-PAYMENT payload and the server's
	// requirements as JSON: the reconciliation pass settles them again.
	Payment      string
	Requirements string
	Status       string // X402Pending, X402Settled or X402Failed
	TxHash       string // the settling transaction, once known
	OperationID  string // the ledger operation that credited the wallet
	Failure      string // the facilitator's reason, once failed
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// X402Tx is what x402 top-ups need from a transaction.
type X402Tx interface {
	X402QuoteTx
	// InsertX402Settlement stores a new pending settlement; false, writing
	// nothing, when its (network, asset, payer, nonce) already has one
	// (a unique index guarantees it, whatever the interleaving).
	InsertX402Settlement(ctx context.Context, s X402Settlement) (bool, error)
	// X402Settlement reads the settlement of an authorization. With lock,
	// the row stays locked until the end of the transaction.
	X402Settlement(ctx context.Context, network, asset, payer, nonce string, lock bool) (X402Settlement, bool, error)
	// RetryX402Settlement makes a failed settlement pending again with s's
	// app, amount, payment and requirements; it returns an error wrapping
	// ledger.ErrConflict when the row is no longer failed.
	RetryX402Settlement(ctx context.Context, s X402Settlement) error
	// FinishX402Settlement stores a pending settlement's status, tx hash,
	// operation id, failure and updated_at; ledger.ErrConflict when it is
	// no longer pending.
	FinishX402Settlement(ctx context.Context, s X402Settlement) error
	// ClaimStaleX402Settlements returns up to limit pending settlements
	// whose updated_at is at least grace away from now, stamping it with
	// now (as ClaimStalePayouts does).
	ClaimStaleX402Settlements(ctx context.Context, now time.Time, grace time.Duration, limit int) ([]X402Settlement, error)
}

// X402Result is a settled x402 top-up: the wallet's topup line and the
// facilitator's settlement response (the X-PAYMENT-RESPONSE).
type X402Result struct {
	Line   ledger.Line
	Settle x402.SettleResponse
}

func (s *Service) x402Ready() error {
	if s.X402.Facilitator == nil || s.X402.PayTo == ZeroAddress {
		return apperr.New(apperr.X402Unavailable, "this server settles no x402 payments (it has no facilitator URL or no payTo address configured); nothing was paid. Top up through checkout_url instead")
	}
	return nil
}

// X402TopUp settles an X-PAYMENT for a top-up of amountCents by appID at
// resource, and credits the wallet exactly once per authorization:
//
//  1. the payment is checked locally against the server's own requirements
//     (server/x402.Check);
//  2. the authorization is claimed (a pending row, unique on network,
//     asset, payer and nonce): a second request with it gets 409
//     x402_replayed (settled) or x402_pending, and moves nothing;
//  3. the facilitator's /verify checks it (balance, on-chain state); a
//     refusal fails the claim (422 x402_settlement_failed);
//  4. the facilitator's /settle sends the transfer. On success the wallet is
//     credited ("topup:<settlement id>", the transaction hash in the note)
//     in the same transaction that marks the row settled. A refusal marks
//     it failed (422 x402_settlement_failed). No answer leaves it pending
//     (502 x402_pending) for ReconcileX402.
//
// The settle response is returned whenever the facilitator gave one, also
// with a refusal, for the X-PAYMENT-RESPONSE header.
func (s *Service) X402TopUp(ctx context.Context, appID string, amountCents int64, resource string, p x402.PaymentPayload) (X402Result, error) {
	ctx = txunit.Detached(ctx) // the claim must commit before the facilitator moves money
	if err := ValidateTopUp(amountCents); err != nil {
		return X402Result{}, err
	}
	if err := s.x402Ready(); err != nil {
		return X402Result{}, err
	}
	now := s.now()
	q, err := s.x402Quoted(ctx, resource, appID, amountCents, p.Payload.Authorization.Value, now)
	if err != nil {
		return X402Result{}, err
	}
	from, err := serverx402.Check(p, q, now)
	if err != nil {
		return X402Result{}, err
	}
	a := p.Payload.Authorization
	before, _ := strconv.ParseInt(a.ValidBefore, 10, 64)
	pj, _ := json.Marshal(p)
	qj, _ := json.Marshal(q)
	st := X402Settlement{
		ID: ids.New("x4s"), AppID: appID, Network: q.Network, Asset: strings.ToLower(q.Asset),
		Payer: strings.ToLower(from), Nonce: strings.ToLower(a.Nonce), Value: a.Value, AmountCents: amountCents,
		ValidBefore: time.Unix(before, 0).UTC(), Payment: string(pj), Requirements: string(qj),
		Status: X402Pending, CreatedAt: now, UpdatedAt: now,
	}
	if err := s.claimX402(ctx, &st); err != nil {
		return X402Result{}, err
	}
	// Verified after the claim, so a replay is told it is one (the
	// facilitator would only say the nonce is used); a refusal releases the
	// claim, as nothing was sent.
	v, err := s.X402.Facilitator.Verify(ctx, p, q)
	if err != nil {
		if ferr := s.failX402(ctx, st, "facilitator unreachable at verification"); ferr != nil {
			return X402Result{}, ferr
		}
		return X402Result{}, apperr.New(apperr.X402Unavailable, "the x402 facilitator could not be reached to verify the payment (%v); nothing was sent for settlement, try again later", err)
	}
	if !v.IsValid {
		if ferr := s.failX402(ctx, st, v.InvalidReason); ferr != nil {
			return X402Result{}, ferr
		}
		return X402Result{}, apperr.New(apperr.X402SettlementFailed, "the x402 facilitator refused the payment: %s; nothing moved", v.InvalidReason)
	}
	return s.settleX402(ctx, st, p, q)
}

// claimX402 claims the authorization for st (inserted, or a failed row
// taken over, keeping its id) or refuses it.
func (s *Service) claimX402(ctx context.Context, st *X402Settlement) error {
	return s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		ok, err := tx.InsertX402Settlement(ctx, *st)
		if err != nil || ok {
			return err
		}
		old, found, err := tx.X402Settlement(ctx, st.Network, st.Asset, st.Payer, st.Nonce, true)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: x402 settlement vanished after a conflict", ledger.ErrConflict)
		}
		switch old.Status {
		case X402Settled:
			return apperr.New(apperr.X402Replayed, "this authorization (payer %s, nonce %s) was already settled (transaction %s) and credited once; sign a new one to top up again", old.Payer, old.Nonce, old.TxHash)
		case X402Pending:
			return apperr.New(apperr.X402Pending, "a settlement of this authorization is under way or its outcome is not known yet; the wallet is credited once if it settles. Do not sign another payment for it")
		}
		st.ID, st.CreatedAt = old.ID, old.CreatedAt
		return tx.RetryX402Settlement(ctx, *st)
	})
}

// settleX402 settles a claimed (pending) settlement through the
// facilitator and records the outcome.
func (s *Service) settleX402(ctx context.Context, st X402Settlement, p x402.PaymentPayload, q x402.Requirements) (X402Result, error) {
	r, err := s.X402.Facilitator.Settle(ctx, p, q)
	if err != nil {
		s.log().Warn("x402 settlement outcome unknown; left pending for reconciliation", slog.String("settlement", st.ID), slog.String("error", err.Error()))
		return X402Result{}, apperr.New(apperr.X402Pending, "the x402 facilitator did not answer the settlement (%v): it is recorded as pending (settlement %s) and the wallet is credited once if the transfer landed. Do not pay again", err, st.ID).WithStatus(502)
	}
	if !r.Success {
		if err := s.failX402(ctx, st, r.ErrorReason); err != nil {
			return X402Result{}, err
		}
		return X402Result{Settle: r}, apperr.New(apperr.X402SettlementFailed, "the x402 facilitator refused the settlement: %s; nothing moved", r.ErrorReason)
	}
	line, err := s.creditX402(ctx, st, r.Transaction)
	if err != nil {
		return X402Result{}, err
	}
	return X402Result{Line: line, Settle: r}, nil
}

// creditX402 credits a settlement's top-up, once: in one transaction it
// posts the topup line and marks the row settled. A row already settled
// (by a racing reconciliation) answers its line.
func (s *Service) creditX402(ctx context.Context, st X402Settlement, txHash string) (ledger.Line, error) {
	var line ledger.Line
	err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		cur, found, err := tx.X402Settlement(ctx, st.Network, st.Asset, st.Payer, st.Nonce, true)
		if err != nil {
			return err
		}
		if !found || cur.ID != st.ID || cur.Status == X402Failed {
			// Cannot happen: a row fails only when nothing was or can be
			// transferred. Loud, for an operator: txHash says money moved.
			s.log().Error("x402 transfer settled for a settlement no longer pending: credit it by hand", slog.String("settlement", st.ID), slog.String("tx", txHash))
			return fmt.Errorf("payments: x402 settlement %s changed under its settlement", st.ID)
		}
		note := fmt.Sprintf("x402 %s tx %s from %s", cur.Network, txHash, cur.Payer)
		if txHash == "" {
			note = fmt.Sprintf("x402 %s from %s (authorization used on chain; transaction not found)", cur.Network, cur.Payer)
		}
		op, err := ledger.TopUp("topup:"+cur.ID, cur.AppID, cur.AmountCents, note)
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
		line, _ = results[0].Line(ledger.Wallet(cur.AppID))
		if cur.Status == X402Settled {
			return nil // credited by the other path; the replayed operation is its line
		}
		cur.Status, cur.TxHash, cur.OperationID, cur.UpdatedAt = X402Settled, txHash, results[0].Operation.ID, now
		return tx.FinishX402Settlement(ctx, cur)
	})
	return line, err
}

func (s *Service) failX402(ctx context.Context, st X402Settlement, reason string) error {
	if reason == "" {
		reason = "unknown"
	}
	return s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
		cur, found, err := tx.X402Settlement(ctx, st.Network, st.Asset, st.Payer, st.Nonce, true)
		if err != nil || !found || cur.Status != X402Pending {
			return err
		}
		cur.Status, cur.Failure, cur.UpdatedAt = X402Failed, reason, s.now()
		return tx.FinishX402Settlement(ctx, cur)
	})
}

// X402Reconciliation counts what one ReconcileX402 pass did.
type X402Reconciliation struct {
	Settled, Failed, Pending int
}

// ReconcileX402 resolves every settlement pending and untouched for longer
// than X402Grace (the request that claimed it has given up). For each, it
// asks the chain whether the authorization was used: used → the wallet is
// credited (once: the row's pending → settled transition is in the same
// transaction as the line) with the transaction found in the token's
// AuthorizationUsed event; unused and past validBefore (plus a minute) →
// failed, nothing moved; unused and still valid → settled again through
// the facilitator with the stored payment. Without a chain, or when the
// chain or facilitator cannot tell, it stays pending until the next pass.
func (s *Service) ReconcileX402(ctx context.Context) (X402Reconciliation, error) {
	ctx = txunit.Detached(ctx)
	var res X402Reconciliation
	for {
		var batch []X402Settlement
		now := s.now()
		err := s.Update(ctx, func(ctx context.Context, tx WriteTx) error {
			var err error
			batch, err = tx.ClaimStaleX402Settlements(ctx, now, X402Grace, x402Batch)
			return err
		})
		if err != nil {
			return res, err
		}
		for _, st := range batch {
			switch s.reconcileX402(ctx, st, now) {
			case X402Settled:
				res.Settled++
			case X402Failed:
				res.Failed++
			default:
				res.Pending++
			}
		}
		if len(batch) < x402Batch {
			return res, nil
		}
	}
}

func (s *Service) reconcileX402(ctx context.Context, st X402Settlement, now time.Time) string {
	log := s.log().With(slog.String("settlement", st.ID), slog.String("app", st.AppID))
	if s.X402.Chain == nil {
		log.Error("x402 settlement pending and no chain RPC is configured to resolve it: check the payer's authorization on chain and resolve it by hand", slog.String("payer", st.Payer), slog.String("nonce", st.Nonce))
		return X402Pending
	}
	used, txHash, err := s.X402.Chain.AuthorizationUsed(ctx, st.Asset, st.Payer, st.Nonce)
	if err != nil && !used {
		log.Warn("x402 reconciliation: the chain could not tell", slog.String("error", err.Error()))
		return X402Pending
	}
	if used {
		if _, err := s.creditX402(ctx, st, txHash); err != nil {
			log.Error("x402 reconciliation: crediting a used authorization", slog.String("error", err.Error()))
			return X402Pending
		}
		log.Info("x402 settlement reconciled: settled on chain, wallet credited", slog.String("tx", txHash))
		return X402Settled
	}
	if now.After(st.ValidBefore.Add(x402Deadline)) {
		if err := s.failX402(ctx, st, "authorization expired unused"); err != nil {
			return X402Pending
		}
		log.Info("x402 settlement reconciled: the authorization expired unused, nothing moved")
		return X402Failed
	}
	var p x402.PaymentPayload
	var q x402.Requirements
	if json.Unmarshal([]byte(st.Payment), &p) != nil || json.Unmarshal([]byte(st.Requirements), &q) != nil {
		log.Error("x402 reconciliation: the stored payment does not decode")
		return X402Pending
	}
	switch _, err := s.settleX402(ctx, st, p, q); {
	case err == nil:
		log.Info("x402 settlement reconciled: settled again with the stored payment")
		return X402Settled
	case apperr.Is(err, apperr.X402SettlementFailed):
		log.Info("x402 settlement reconciled: the facilitator refused it, nothing moved", slog.String("error", err.Error()))
		return X402Failed
	default:
		return X402Pending
	}
}
