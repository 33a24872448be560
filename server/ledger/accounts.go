package ledger

import (
	"fmt"
	"hash/fnv"
	"strings"
)

// Account ids. App accounts are named after the app; platform accounts are
// sharded so that no single row serialises every operation (a topup touches a
// processor shard, not one global processor row). A platform account's balance
// is the sum over its shards.
const (
	walletPrefix         = "wallet:"
	escrowPrefix         = "escrow:"
	payoutClearingPrefix = "payout_clearing:"

	PlatformRevenue     = "platform:revenue"      // the take of cleared installs
	PlatformCreditBonus = "platform:credit_bonus" // expense of the credits bonus
	PlatformAdjustments = "platform:adjustments"  // counter-account of operator corrections
	ProcessorClearing   = "processor:clearing"    // the outside world: top-ups in, payouts out

	// Shards per platform account.
	Shards = 16
)

// Wallet is the id of an app's wallet account.
func Wallet(appID string) string { return walletPrefix + appID }

// Escrow is the id of an advertiser's escrow account.
func Escrow(appID string) string { return escrowPrefix + appID }

// PayoutClearing is the id of the account that holds a payout's reserved
// amount while its transfer is in flight: one account per payout, credited
// once by the reservation and emptied once, by the settlement (the money
// left for the processor) or by the return (back to the wallet).
func PayoutClearing(payoutID string) string { return payoutClearingPrefix + payoutID }

// Shard is the id of the shard of a platform account used for an operation
// key. The choice is stable, so a replay touches the same shard.
func Shard(platformAccount, key string) string {
	h := fnv.New32a()
	h.Write([]byte(key))
	return fmt.Sprintf("%s:%02d", platformAccount, h.Sum32()%Shards)
}

// AccountClass says what balance rules an account follows.
type AccountClass int

const (
	ClassWallet         AccountClass = iota // never below zero unless a posting may overdraw
	ClassEscrow                             // never below zero
	ClassPayoutClearing                     // never below zero: one payout's reservation
	ClassPlatform                           // any sign: the platform's and the world's side
)

// ClassOf returns the class of an account id.
func ClassOf(account string) AccountClass {
	switch {
	case strings.HasPrefix(account, walletPrefix):
		return ClassWallet
	case strings.HasPrefix(account, escrowPrefix):
		return ClassEscrow
	case strings.HasPrefix(account, payoutClearingPrefix):
		return ClassPayoutClearing
	default:
		return ClassPlatform
	}
}

// AppOf returns the app id of a wallet or escrow account, or "".
func AppOf(account string) string {
	if a, ok := strings.CutPrefix(account, walletPrefix); ok {
		return a
	}
	if a, ok := strings.CutPrefix(account, escrowPrefix); ok {
		return a
	}
	return ""
}
