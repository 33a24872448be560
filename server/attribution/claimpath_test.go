package attribution_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/ledger"
)

// TestClaimOfClickOnAnotherInstance: a claim of a click that another
// instance of the same database recorded (so this one has no hint of its
// chain's id, and on PostgreSQL reads the hold's ledger state again for the
// stored chain) installs that chain and holds its price once.
func TestClaimOfClickOnAnotherInstance(t *testing.T) {
	eachWorld(t, attribution.Rules{}, func(t *testing.T, w *world) {
		p := w.pair("productivity", 0)
		a := w.attr
		other := &attribution.Service{Update: a.Update, View: a.View, Now: a.Now, Auction: a.Auction,
			MACKey: a.MACKey, MACKeys: a.MACKeys, IPs: a.IPs, Rules: a.Rules, Log: a.Log}
		tok := w.click(p, residential)
		clicked, _, err := a.Click(w.ctx, tok, residential) // the click again: its chain
		require.NoError(t, err)
		w.clock.Advance(30 * time.Second)
		cs := w.countersign(p.advKey, tok, "dev-other", w.now(), p.adv)
		ch, replayed, err := other.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: residential})
		require.NoError(t, err)
		assert.False(t, replayed)
		assert.Equal(t, clicked.ID, ch.ID)
		assert.Equal(t, attribution.StateInstalled, w.chain(ch.ID).State)
		// Sent again to the instance that recorded the click: the same claim.
		again, replayed, err := a.Install(w.ctx, attribution.Claim{Token: tok, Countersignature: cs, IP: residential})
		require.NoError(t, err)
		assert.True(t, replayed)
		assert.Equal(t, ch.ID, again.ID)
		holds := 0
		for _, l := range w.wallet(p.adv) {
			if l.Type == ledger.TypeEscrowHold {
				holds++
			}
		}
		assert.Equal(t, 1, holds)
		w.verify()
	})
}
