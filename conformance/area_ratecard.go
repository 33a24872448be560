package conformance

import (
	"net/http"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Rate card: its constants and categories; floors that never rise
// (seed-api "RateCard"; decisions §6).
func rateCardChecks() []Check {
	return []Check{
		{"the rate card's constants", checkRateCardConstants},
		{"categories have keys, labels and floor ranges", checkRateCardCategories},
		{"floors are lowered by operators and never rise", checkFloorsNeverRise},
	}
}

// rateCard reads the rate card, failing the check when it cannot.
func rateCard(c *C) *xpromo.RateCard {
	c.Helper()
	rc, err := c.Public().GetRateCard(c.Ctx())
	c.NoError(err, "GET /rate-card")
	if len(rc.Categories) == 0 {
		c.Fatalf("the rate card has no categories")
	}
	return rc
}

// someCategory is a category key of the rate card.
func someCategory(c *C) string {
	c.Helper()
	return rateCard(c).Categories[0].Key
}

func checkRateCardConstants(c *C) {
	rc := rateCard(c)
	requireKeys(c, "RateCard", c.Last().JSON(c), "currency", "take_rate", "credit_bonus", "categories", "reserved_floor_share", "pricing_model")
	if rc.Currency != "EUR" {
		c.Errorf("currency %q, want EUR", rc.Currency)
	}
	if rc.TakeRate != 0.3 {
		c.Errorf("take_rate %v, want 0.3", rc.TakeRate)
	}
	if rc.CreditBonus != 1.2 {
		c.Errorf("credit_bonus %v, want 1.2", rc.CreditBonus)
	}
	if rc.ReservedFloorShare != 0.3 {
		c.Errorf("reserved_floor_share %v, want 0.3", rc.ReservedFloorShare)
	}
	if rc.PricingModel != "floor_plus_second_price" {
		c.Errorf("pricing_model %q, want floor_plus_second_price", rc.PricingModel)
	}
}

func checkRateCardCategories(c *C) {
	rc := rateCard(c)
	raw := c.Last().JSON(c)
	if cats, ok := raw["categories"].([]any); ok {
		for _, cat := range cats {
			if m, ok := cat.(map[string]any); ok {
				requireKeys(c, "a rate card category", m, "key", "label", "floor_cents_min", "floor_cents_max")
			}
		}
	}
	seen := map[string]bool{}
	for _, cat := range rc.Categories {
		if cat.Key == "" || cat.Label == "" {
			c.Errorf("category %+v: key and label must not be empty", cat)
		}
		if seen[cat.Key] {
			c.Errorf("category %q is listed twice", cat.Key)
		}
		seen[cat.Key] = true
		if cat.FloorCentsMin <= 0 || cat.FloorCentsMin > cat.FloorCentsMax {
			c.Errorf("category %q: floor_cents_min %d, floor_cents_max %d; want 0 < min <= max", cat.Key, cat.FloorCentsMin, cat.FloorCentsMax)
		}
	}
}

// category returns the rate card's entry for key.
func category(c *C, key string) xpromo.RateCardCategory {
	c.Helper()
	for _, cat := range rateCard(c).Categories {
		if cat.Key == key {
			return cat
		}
	}
	c.Fatalf("category %q is not on the rate card", key)
	return xpromo.RateCardCategory{}
}

func checkFloorsNeverRise(c *C) {
	admin := c.Admin()
	ctx := c.Ctx()
	// The category with the highest floor, bought by a mac app: the
	// campaign's floor_cents is the category's current mac floor.
	rc := rateCard(c)
	key := rc.Categories[0].Key
	for _, cat := range rc.Categories {
		if cat.FloorCentsMax > category(c, key).FloorCentsMax {
			key = cat.Key
		}
	}
	a := c.NewApp()
	floor := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories = []string{key} }).FloorCents
	if floor <= 1 {
		c.Skipf("category %q has a mac floor of %d cents: nothing left to cut", key, floor)
	}
	// Raising is refused and changes nothing.
	_, err := admin.AdminCutFloor(ctx, key, xpromo.FloorCut{Platform: xpromo.PlatformMac, FloorCents: floor + 1, Reason: "conformance: a rise"})
	c.ExpectError(err, http.StatusConflict, "floor_cannot_rise", "raising a floor")
	// A cut of one cent shows on the rate card and in new campaigns' floors.
	got, err := admin.AdminCutFloor(ctx, key, xpromo.FloorCut{Platform: xpromo.PlatformMac, FloorCents: floor - 1, Reason: "conformance: a one-cent cut"})
	c.NoError(err, "cutting a floor by one cent")
	if got.Floors.Mac != floor-1 {
		c.Errorf("after the cut the mac floor is %d, want %d", got.Floors.Mac, floor-1)
	}
	card := category(c, key)
	if card.FloorCentsMin != min(got.Floors.Mac, got.Floors.Win) || card.FloorCentsMax != max(got.Floors.Mac, got.Floors.Win) {
		c.Errorf("after the cut the rate card says %d..%d, the floors are mac %d, win %d", card.FloorCentsMin, card.FloorCentsMax, got.Floors.Mac, got.Floors.Win)
	}
	after := createCampaign(c, a, func(r *xpromo.CreateCampaignRequest) { r.Categories = []string{key} })
	if after.FloorCents != floor-1 {
		c.Errorf("a campaign after the cut has floor_cents %d, want %d", after.FloorCents, floor-1)
	}
	// Putting it back up is a rise.
	_, err = admin.AdminCutFloor(ctx, key, xpromo.FloorCut{Platform: xpromo.PlatformMac, FloorCents: floor, Reason: "conformance: undo"})
	c.ExpectError(err, http.StatusConflict, "floor_cannot_rise", "putting a cut floor back up")
}
