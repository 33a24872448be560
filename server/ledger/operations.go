package ledger

import (
	"github.com/xpromo/xpromo/server/apperr"
)

// The take rate and credit bonus of the rate card, as integer fractions so
// that all money arithmetic stays in integers.
const (
	TakeNumerator, TakeDenominator   = 30, 100 // take_rate 0.3
	BonusNumerator, BonusDenominator = 12, 10  // credit_bonus 1.2
)

// Split divides the price of a cleared install. The platform takes
// price×30/100 rounded down; the publisher earns the rest in cash, or that
// rest ×12/10 rounded down in credits, the difference being the bonus the
// platform pays. earn + take − bonus == price always.
func Split(price int64, mode EarnMode) (earn, take, bonus int64) {
	take = price * TakeNumerator / TakeDenominator
	earn = price - take
	if mode == EarnCredits {
		bonus = earn*BonusNumerator/BonusDenominator - earn
		earn += bonus
	}
	return earn, take, bonus
}

func positive(field string, amount int64) error {
	if amount <= 0 {
		return apperr.New(apperr.InvalidOperation, "%s must be positive, got %d", field, amount)
	}
	return nil
}

// TopUp credits an app's wallet with money received by the payment processor.
func TopUp(key, appID string, amount int64, note string) (Operation, error) {
	if err := positive("amount", amount); err != nil {
		return Operation{}, err
	}
	return Operation{Key: key, Kind: KindTopup, Postings: []Posting{
		{Account: Shard(ProcessorClearing, key), Type: TypeTopup, Amount: -amount, Note: note},
		{Account: Wallet(appID), Type: TypeTopup, Amount: amount, Note: note},
	}}, nil
}

// EscrowHold moves an install's price from the advertiser's wallet into its
// escrow at install claim. It fails with insufficient_funds when the wallet
// cannot cover it.
func EscrowHold(key string, h Hold) (Operation, error) {
	if err := positive("amount", h.Amount); err != nil {
		return Operation{}, err
	}
	if h.ID == "" || h.Advertiser == "" {
		return Operation{}, apperr.New(apperr.InvalidOperation, "a hold needs an id and an advertiser")
	}
	return Operation{Key: key, Kind: KindEscrowHold, Opens: &h, Postings: []Posting{
		{Account: Wallet(h.Advertiser), Type: TypeEscrowHold, Amount: -h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
		{Account: Escrow(h.Advertiser), Type: TypeEscrowHold, Amount: h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
	}}, nil
}

// EscrowRelease returns a hold to the advertiser's wallet: the install did not
// activate in its window, or was rejected before clearing.
func EscrowRelease(key string, h Hold) (Operation, error) {
	if err := positive("amount", h.Amount); err != nil {
		return Operation{}, err
	}
	return Operation{Key: key, Kind: KindEscrowRelease,
		Resolves: &Settle{HoldID: h.ID, Resolution: "release", Advertiser: h.Advertiser, Amount: h.Amount},
		Postings: []Posting{
			{Account: Escrow(h.Advertiser), Type: TypeEscrowRelease, Amount: -h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
			{Account: Wallet(h.Advertiser), Type: TypeEscrowRelease, Amount: h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
		}}, nil
}

// Clear settles a hold whose install reached activated_48h: the advertiser's
// escrow is released and charged, the publisher earns its share (in mode), the
// platform keeps the take and pays any credit bonus.
func Clear(key string, h Hold, mode EarnMode) (Operation, error) {
	if err := positive("amount", h.Amount); err != nil {
		return Operation{}, err
	}
	if h.Publisher == "" || h.Publisher == h.Advertiser {
		return Operation{}, apperr.New(apperr.InvalidOperation, "clearing needs a publisher other than the advertiser")
	}
	earn, take, bonus := Split(h.Amount, mode)
	ps := []Posting{
		{Account: Escrow(h.Advertiser), Type: TypeEscrowRelease, Amount: -h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
		{Account: Wallet(h.Advertiser), Type: TypeEscrowRelease, Amount: h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
		{Account: Wallet(h.Advertiser), Type: TypeCharge, Amount: -h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID},
		{Account: Wallet(h.Publisher), Type: TypeEarn, Amount: earn, Counterparty: h.Advertiser, ChainID: h.ChainID, EarnMode: mode},
		{Account: Shard(PlatformRevenue, key), Type: TypeTake, Amount: take, Counterparty: h.Advertiser, ChainID: h.ChainID},
	}
	if bonus > 0 {
		ps = append(ps, Posting{Account: Shard(PlatformCreditBonus, key), Type: TypeCreditBonus, Amount: -bonus, Counterparty: h.Publisher, ChainID: h.ChainID})
	}
	return Operation{Key: key, Kind: KindClear, Postings: ps,
		Resolves: &Settle{HoldID: h.ID, Resolution: "charge", Advertiser: h.Advertiser, Amount: h.Amount}}, nil
}

// Clawback reverses a cleared install found fraudulent afterwards: the
// publisher gives back its earnings (its wallet may go below zero if they were
// paid out), the advertiser is refunded the price as an adjustment, and the
// platform returns its take and recovers the bonus.
func Clawback(key string, h Hold, mode EarnMode, note string) (Operation, error) {
	if err := positive("amount", h.Amount); err != nil {
		return Operation{}, err
	}
	earn, take, bonus := Split(h.Amount, mode)
	ps := []Posting{
		{Account: Wallet(h.Publisher), Type: TypeClawback, Amount: -earn, Counterparty: h.Advertiser, ChainID: h.ChainID, EarnMode: mode, Note: note, MayOverdraw: true},
		{Account: Wallet(h.Advertiser), Type: TypeAdjustment, Amount: h.Amount, Counterparty: h.Publisher, ChainID: h.ChainID, Note: note},
		{Account: Shard(PlatformRevenue, key), Type: TypeTake, Amount: -take, Counterparty: h.Advertiser, ChainID: h.ChainID, Note: note},
	}
	if bonus > 0 {
		ps = append(ps, Posting{Account: Shard(PlatformCreditBonus, key), Type: TypeCreditBonus, Amount: bonus, Counterparty: h.Publisher, ChainID: h.ChainID, Note: note})
	}
	return Operation{Key: key, Kind: KindClawback, Postings: ps}, nil
}

// A payout moves its amount in two steps, each an operation keyed by the
// payout id so that no step ever posts twice:
//
//   - PayoutReserve, before the provider is called: the wallet's `payout`
//     line (−amount) and the payout's clearing account (+amount), in the
//     transaction that records the pending payout;
//   - then exactly one of PayoutSettle (the transfer happened: clearing →
//     processor, no wallet line) or PayoutReturn (the provider refused it:
//     clearing → wallet, a `payout` line of +amount).
//
// The clearing account never goes below zero, so a reservation is settled or
// returned at most once, whatever the keys (docs/ledger.md).

// PayoutReserveKey is the ledger key of a payout's reservation.
func PayoutReserveKey(payoutID string) string { return "payout:" + payoutID }

// PayoutSettleKey is the ledger key of a payout's settlement.
func PayoutSettleKey(payoutID string) string { return "payout_settle:" + payoutID }

// PayoutReturnKey is the ledger key of a payout's return to the wallet.
func PayoutReturnKey(payoutID string) string { return "payout_return:" + payoutID }

// PayoutReserve takes a payout's amount out of the app's wallet into the
// payout's clearing account. It fails with insufficient_funds when the
// wallet cannot cover it.
func PayoutReserve(payoutID, appID string, amount int64) (Operation, error) {
	if err := positive("amount", amount); err != nil {
		return Operation{}, err
	}
	note := "payout " + payoutID
	return Operation{Key: PayoutReserveKey(payoutID), Kind: KindPayout, Postings: []Posting{
		{Account: Wallet(appID), Type: TypePayout, Amount: -amount, Note: note, EarnMode: EarnCash},
		{Account: PayoutClearing(payoutID), Type: TypePayout, Amount: amount, Note: note},
	}}, nil
}

// PayoutSettle hands a reserved payout to the processor once its transfer
// is made; the note is the transfer id.
func PayoutSettle(payoutID string, amount int64, transferID string) (Operation, error) {
	if err := positive("amount", amount); err != nil {
		return Operation{}, err
	}
	key := PayoutSettleKey(payoutID)
	return Operation{Key: key, Kind: KindPayoutSettle, Postings: []Posting{
		{Account: PayoutClearing(payoutID), Type: TypePayout, Amount: -amount, Note: transferID},
		{Account: Shard(ProcessorClearing, key), Type: TypePayout, Amount: amount, Note: transferID},
	}}, nil
}

// PayoutReturn gives a reserved payout back to the app's wallet when the
// provider refused its transfer; the note says why.
func PayoutReturn(payoutID, appID string, amount int64, why string) (Operation, error) {
	if err := positive("amount", amount); err != nil {
		return Operation{}, err
	}
	note := "payout " + payoutID + " returned: " + why
	return Operation{Key: PayoutReturnKey(payoutID), Kind: KindPayoutReturn, Postings: []Posting{
		{Account: PayoutClearing(payoutID), Type: TypePayout, Amount: -amount, Note: note},
		{Account: Wallet(appID), Type: TypePayout, Amount: amount, Note: note, EarnMode: EarnCash},
	}}, nil
}

// Adjustment is an operator's correction of a wallet, up or down, with a
// mandatory note. It never takes the wallet below zero.
func Adjustment(key, appID string, amount int64, note string) (Operation, error) {
	if amount == 0 {
		return Operation{}, apperr.New(apperr.InvalidOperation, "an adjustment needs a non-zero amount")
	}
	if note == "" {
		return Operation{}, apperr.New(apperr.InvalidOperation, "an adjustment needs a note")
	}
	return Operation{Key: key, Kind: KindAdjustment, Postings: []Posting{
		{Account: Wallet(appID), Type: TypeAdjustment, Amount: amount, Note: note},
		{Account: Shard(PlatformAdjustments, key), Type: TypeAdjustment, Amount: -amount, Note: note},
	}}, nil
}

// ProcessorAdjustment is a top-up's money moving again at the processor after
// it was credited: negative when the processor took it back (a refund, a
// dispute's funds withdrawn), positive when it returned it (a dispute's
// funds reinstated). The wallet's line is an `adjustment` with the note, the
// counter-posting is the processor's side, as a top-up's. A debit may take
// the wallet below zero: the credits may already be spent, and the app then
// owes them (Verify accepts a wallet overdrawn only by this shape and by
// clawbacks).
func ProcessorAdjustment(key, appID string, amount int64, note string) (Operation, error) {
	if amount == 0 {
		return Operation{}, apperr.New(apperr.InvalidOperation, "a processor adjustment needs a non-zero amount")
	}
	if note == "" {
		return Operation{}, apperr.New(apperr.InvalidOperation, "a processor adjustment needs a note")
	}
	return Operation{Key: key, Kind: KindProcessorAdjustment, Postings: []Posting{
		{Account: Shard(ProcessorClearing, key), Type: TypeAdjustment, Amount: -amount, Note: note},
		{Account: Wallet(appID), Type: TypeAdjustment, Amount: amount, Note: note, MayOverdraw: amount < 0},
	}}, nil
}
