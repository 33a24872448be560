package crashtest

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"path"

	"github.com/xpromo/xpromo/sdk/attribution"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// The operations, built with their keys and bodies fixed: every attempt
// sends the same. Bodies signed with the device's clock (claims,
// heartbeats) are signed at the first attempt, not when built, so that an
// operation queued behind a restart is not stale when it first goes out.

// newOp numbers and records a new operation.
func (h *harness) newOp(kind Kind, cycle int, appID string) *Op {
	h.seq++
	op := &Op{Kind: kind, Seq: h.seq, Cycle: cycle, App: appID}
	h.ops = append(h.ops, op)
	return op
}

// key is an Idempotency-Key of op: unique in the run, remembered in op.
func (h *harness) key(op *Op, suffix string) string {
	k := fmt.Sprintf("crashtest-%s-%d%s", h.run, op.Seq, suffix)
	op.Keys = append(op.Keys, k)
	return k
}

// topUpOp buys amount of credits for a: a checkout session (key
// …-checkout), then its test payment (key …-pay), which credits the
// wallet.
func (h *harness) topUpOp(cycle int, a *app, amount int64) *Op {
	op := h.newOp(KindTopUp, cycle, a.ID)
	start, pay := h.key(op, "-checkout"), h.key(op, "-pay")
	var checkout string
	op.send = func(ctx context.Context) error {
		if checkout == "" {
			r, err := a.client.TopUp(ctx, a.ID, &xpromo.TopUpParams{AmountCents: amount}, xpromo.WithIdempotencyKey(start))
			if err != nil {
				return err
			}
			u, err := url.Parse(r.CheckoutURL)
			if err != nil || r.CheckoutURL == "" {
				return fmt.Errorf("top-up: no usable checkout URL in the answer (%q)", r.CheckoutURL)
			}
			if op.Session, err = url.PathUnescape(path.Base(u.Path)); err != nil {
				return err
			}
			checkout = r.CheckoutURL
		}
		s, err := h.admin.CompleteTestCheckout(ctx, checkout, xpromo.WithIdempotencyKey(pay))
		if err == nil && s.Status != "completed" {
			err = fmt.Errorf("test checkout %s answered status %q", op.Session, s.Status)
		}
		return err
	}
	return op
}

// adjustmentOp posts an operator's correction of amount to a's wallet,
// with a note unique in the run.
func (h *harness) adjustmentOp(cycle int, a *app, amount int64) *Op {
	op := h.newOp(KindAdjustment, cycle, a.ID)
	k := h.key(op, "")
	op.Amount = amount
	op.Note = fmt.Sprintf("crashtest %s adjustment %d", h.run, op.Seq)
	op.send = func(ctx context.Context) error {
		_, err := h.admin.AdminAdjustWallet(ctx, a.ID, xpromo.Adjustment{AmountCents: amount, Note: op.Note}, xpromo.WithIdempotencyKey(k))
		return err
	}
	return op
}

// device is a simulated computer: its SDK's device id and its address,
// which the server takes from X-Forwarded-For (it trusts loopback), so
// that the per-device and per-address install limits never refuse the
// run's claims.
type device struct {
	id   string
	addr string
}

func (h *harness) newDevice() device {
	h.devices++
	n := h.devices
	// 10.128.0.0/9: eight million devices, private, never a datacenter.
	a := netip.AddrFrom4([4]byte{10, 128 | byte(n>>16&0x7f), byte(n >> 8), byte(n)})
	return device{id: fmt.Sprintf("crashtest-%s-dev-%d", h.run, n), addr: a.String()}
}

// claim is what a claim needs later, for its heartbeat.
type claim struct {
	token string
	adv   *app
	dev   device
}

// claimOp is the advertiser SDK's install claim of c, on a new device.
func (h *harness) claimOp(cycle int, c click) *Op {
	op := h.newOp(KindClaim, cycle, c.adv.ID)
	op.Publisher = c.pub.ID
	k := h.key(op, "")
	dev := h.newDevice()
	h.claims[op] = claim{token: c.token, adv: c.adv, dev: dev}
	var body *xpromo.InstallRequest
	op.send = func(ctx context.Context) error {
		if body == nil {
			cs, err := attribution.Countersign(c.adv.key.Private, c.adv.key.ID, c.token, dev.id, h.clock.Now(), c.adv.ID)
			if err != nil {
				return errors.Join(errLocal, err)
			}
			body = &xpromo.InstallRequest{Token: c.token, Countersignature: cs}
		}
		r, err := h.admin.SDKInstall(ctx, body, xpromo.WithIdempotencyKey(k), xpromo.WithHeader("X-Forwarded-For", dev.addr))
		if err != nil {
			return err
		}
		op.Chain, op.State = r.ChainID, r.State
		return nil
	}
	return op
}

// heartbeatOp is the advertiser SDK's first heartbeat of the install of
// an acknowledged claim.
func (h *harness) heartbeatOp(cycle int, claimOp *Op) *Op {
	c := h.claims[claimOp]
	op := h.newOp(KindHeartbeat, cycle, claimOp.App)
	op.Chain = claimOp.Chain
	k := h.key(op, "")
	var body *xpromo.HeartbeatRequest
	op.send = func(ctx context.Context) error {
		if body == nil {
			hb, err := attribution.SignHeartbeat(c.adv.key.Private, c.adv.key.ID, attribution.HeartbeatClaims{
				AppID: c.adv.ID, DeviceID: c.dev.id, TokenHash: attribution.TokenHashString(c.token),
				Seq: 1, SentAt: h.clock.Now().Unix(),
			})
			if err != nil {
				return errors.Join(errLocal, err)
			}
			body = &xpromo.HeartbeatRequest{Heartbeat: hb}
		}
		r, err := h.admin.SDKHeartbeat(ctx, body, xpromo.WithIdempotencyKey(k), xpromo.WithHeader("X-Forwarded-For", c.dev.addr))
		if err != nil {
			return err
		}
		op.State = r.State
		return nil
	}
	return op
}

// sweepOp is an operator's clearing sweep.
func (h *harness) sweepOp(cycle int) *Op {
	op := h.newOp(KindSweep, cycle, "")
	k := h.key(op, "")
	op.send = func(ctx context.Context) error {
		_, err := h.admin.AdminSweep(ctx, xpromo.WithIdempotencyKey(k))
		return err
	}
	return op
}

// payoutOp asks for a's payout.
func (h *harness) payoutOp(cycle int, a *app) *Op {
	op := h.newOp(KindPayout, cycle, a.ID)
	k := h.key(op, "")
	op.send = func(ctx context.Context) error {
		r, err := a.client.RequestPayout(ctx, a.ID, xpromo.WithIdempotencyKey(k))
		if err != nil {
			return err
		}
		op.Transfer, op.Payout, op.Amount = r.TransferID, r.PayoutID, r.AmountCents
		return nil
	}
	return op
}

// errLocal marks a failure of the harness itself (signing), which no
// retry fixes.
var errLocal = errors.New("crashtest: local failure")
