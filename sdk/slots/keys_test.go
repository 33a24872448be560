package slots

import (
	"crypto/rand"
	"sync"
	"testing"
	"time"

	"github.com/xpromo/xpromo/sdk/attribution"
)

type testKeySet struct {
	publisher, advertiser attribution.KeyPair
	mac                   attribution.MACKey
}

var (
	testKeysOnce sync.Once
	testKeysVal  testKeySet
)

// testKeys returns SDK key pairs for a publisher and an advertiser app and
// a server MAC key, made once per test binary.
func testKeys(t testing.TB) testKeySet {
	testKeysOnce.Do(func() {
		pub, err1 := attribution.GenerateKey(nil)
		adv, err2 := attribution.GenerateKey(nil)
		secret := make([]byte, 32)
		_, err3 := rand.Read(secret)
		if err1 != nil || err2 != nil || err3 != nil {
			panic("test keys")
		}
		testKeysVal = testKeySet{publisher: pub, advertiser: adv, mac: attribution.MACKey{ID: "mk_test", Secret: secret}}
	})
	return testKeysVal
}

// testClickAt is the click time of newTestClick's tokens.
var testClickAt = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// newTestClick signs a real click token for an offer of app_pub's slot
// advertising advertiser, sealed with the test MAC key.
func newTestClick(t testing.TB, key attribution.KeyPair, advertiser string) string {
	t.Helper()
	nonce, err := attribution.NewNonce(nil)
	if err != nil {
		t.Fatal(err)
	}
	offer, err := attribution.SealOffer(testKeys(t).mac, attribution.Offer{
		Nonce: nonce, Publisher: "app_pub", Advertiser: advertiser, CampaignID: "cmp_1",
		Category: "productivity", Platform: attribution.PlatformMac, PriceCents: 250,
		OfferedAt: testClickAt.Add(-time.Minute).Unix(),
	})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := attribution.SignClick(key.Private, key.ID, attribution.NewClickClaims(offer, testClickAt))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}
