package market_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/market"
)

func TestDefaultCatalogue(t *testing.T) {
	cats, err := market.LoadCatalogue("")
	require.NoError(t, err)
	var keys []string
	for _, c := range cats {
		keys = append(keys, c.Key)
		assert.NotEmpty(t, c.Label)
		// Desktop-app CPI floors, mac at or above win.
		assert.GreaterOrEqual(t, c.Floors[xpromo.PlatformMac], c.Floors[xpromo.PlatformWin], c.Key)
		assert.GreaterOrEqual(t, c.Floors[xpromo.PlatformWin], int64(100), c.Key)
		assert.LessOrEqual(t, c.Floors[xpromo.PlatformMac], int64(1000), c.Key)
	}
	assert.Equal(t, []string{"design", "developer-tools", "education", "finance", "games", "music-audio",
		"photo-video", "productivity", "security", "utilities"}, keys, "ten categories, ordered by key")
}

func TestLoadCatalogueFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "categories.json")
	require.NoError(t, os.WriteFile(path, []byte(`{"categories":[
		{"key":"zeta","label":"Zeta","floors":{"mac":300,"win":200}},
		{"key":"alpha","label":"Alpha","floors":{"win":100,"mac":150}}]}`), 0o644))
	cats, err := market.LoadCatalogue(path)
	require.NoError(t, err)
	require.Len(t, cats, 2)
	assert.Equal(t, market.Category{Key: "alpha", Label: "Alpha", Floors: map[xpromo.Platform]int64{"mac": 150, "win": 100}}, cats[0])
	assert.Equal(t, "zeta", cats[1].Key)

	_, err = market.LoadCatalogue(filepath.Join(t.TempDir(), "missing.json"))
	assert.ErrorContains(t, err, "categories file")
}

func TestParseCatalogueRefusesMistakes(t *testing.T) {
	for name, doc := range map[string]string{
		"unknown field":    `{"categories":[{"key":"a","label":"A","floors":{"mac":1,"win":1},"floor":3}]}`,
		"duplicate key":    `{"categories":[{"key":"a","label":"A","floors":{"mac":1,"win":1}},{"key":"a","label":"B","floors":{"mac":1,"win":1}}]}`,
		"missing platform": `{"categories":[{"key":"a","label":"A","floors":{"mac":1}}]}`,
		"unknown platform": `{"categories":[{"key":"a","label":"A","floors":{"mac":1,"win":1,"linux":1}}]}`,
		"zero floor":       `{"categories":[{"key":"a","label":"A","floors":{"mac":0,"win":1}}]}`,
		"huge floor":       `{"categories":[{"key":"a","label":"A","floors":{"mac":1000001,"win":1}}]}`,
		"fractional floor": `{"categories":[{"key":"a","label":"A","floors":{"mac":1.5,"win":1}}]}`,
		"bad key":          `{"categories":[{"key":"Photo Video","label":"A","floors":{"mac":1,"win":1}}]}`,
		"no label":         `{"categories":[{"key":"a","label":"","floors":{"mac":1,"win":1}}]}`,
		"long label":       `{"categories":[{"key":"a","label":"` + strings.Repeat("é", market.MaxLabelLength+1) + `","floors":{"mac":1,"win":1}}]}`,
		"bidi label":       `{"categories":[{"key":"a","label":"A\u202eB","floors":{"mac":1,"win":1}}]}`,
		"newline label":    `{"categories":[{"key":"a","label":"A\nB","floors":{"mac":1,"win":1}}]}`,
		"too many":         tooManyCategories(),
		"empty":            `{"categories":[]}`,
		"trailing data":    `{"categories":[{"key":"a","label":"A","floors":{"mac":1,"win":1}}]} {}`,
		"not json":         `categories: []`,
	} {
		_, err := market.ParseCatalogue([]byte(doc))
		assert.Error(t, err, name)
	}
}

func tooManyCategories() string {
	cats := make([]string, market.MaxCategories+1)
	for i := range cats {
		cats[i] = fmt.Sprintf(`{"key":"c%d","label":"C","floors":{"mac":1,"win":1}}`, i)
	}
	return `{"categories":[` + strings.Join(cats, ",") + `]}`
}
