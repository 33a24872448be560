package market

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/textcheck"
)

// defaultCatalogue is the catalogue that ships with the server, used when the
// operator configures none.
//
//go:embed categories.json
var defaultCatalogue []byte

// Platforms are the platforms every category has a floor for, in the order
// floors are reconciled and listed.
var Platforms = []xpromo.Platform{xpromo.PlatformMac, xpromo.PlatformWin}

// Category is one category of the operator's catalogue: its key, its label
// and its configured floor per platform, in cents.
type Category struct {
	Key    string                    `json:"key"`
	Label  string                    `json:"label"`
	Floors map[xpromo.Platform]int64 `json:"floors"`
}

// MaxFloorCents bounds a configured or requested floor (EUR 10,000 per
// install): anything above is a typo, not a price.
const MaxFloorCents = 1_000_000

var keyPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,63}$`)

// Bounds of a catalogue, as openapi.json publishes them for the rate card:
// how many categories, and how long a label (characters).
const (
	MaxCategories  = 200
	MaxLabelLength = 200
)

// LoadCatalogue reads the catalogue file at path, or the default catalogue
// when path is "". The file is JSON: {"categories": [{"key", "label",
// "floors": {"mac": cents, "win": cents}}]}. It is read strictly: unknown
// fields, duplicate keys, a missing platform or a non-positive floor are
// errors, so a typo cannot silently publish a wrong rate card. Categories are
// returned ordered by key.
func LoadCatalogue(path string) ([]Category, error) {
	raw := defaultCatalogue
	if path != "" {
		var err error
		if raw, err = os.ReadFile(path); err != nil {
			return nil, fmt.Errorf("categories file: %w", err)
		}
	}
	cats, err := ParseCatalogue(raw)
	if err != nil && path != "" {
		return nil, fmt.Errorf("categories file %s: %w", path, err)
	}
	return cats, err
}

// ParseCatalogue parses and checks a catalogue document (see LoadCatalogue).
func ParseCatalogue(raw []byte) ([]Category, error) {
	var doc struct {
		Categories []Category `json:"categories"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("not a catalogue document: %w", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a catalogue document: trailing data after the JSON object")
	}
	if len(doc.Categories) == 0 {
		return nil, errors.New("no categories")
	}
	if len(doc.Categories) > MaxCategories {
		return nil, fmt.Errorf("%d categories; at most %d", len(doc.Categories), MaxCategories)
	}
	seen := map[string]bool{}
	for _, c := range doc.Categories {
		if !keyPattern.MatchString(c.Key) {
			return nil, fmt.Errorf("category key %q: want 1-64 characters of a-z, 0-9 and -, starting with a letter or digit", c.Key)
		}
		if seen[c.Key] {
			return nil, fmt.Errorf("category %q is listed twice", c.Key)
		}
		seen[c.Key] = true
		if c.Label == "" {
			return nil, fmt.Errorf("category %q has no label", c.Key)
		}
		if utf8.RuneCountInString(c.Label) > MaxLabelLength {
			return nil, fmt.Errorf("category %q: the label is longer than %d characters", c.Key, MaxLabelLength)
		}
		if r, ok := textcheck.FirstHidden(c.Label); ok {
			return nil, fmt.Errorf("category %q: the label holds %U, a control or invisible formatting character", c.Key, r)
		}
		for p := range c.Floors {
			if !p.Valid() {
				return nil, fmt.Errorf("category %q: unknown platform %q (want mac and win)", c.Key, p)
			}
		}
		for _, p := range Platforms {
			f, ok := c.Floors[p]
			if !ok {
				return nil, fmt.Errorf("category %q has no %s floor", c.Key, p)
			}
			if f < 1 || f > MaxFloorCents {
				return nil, fmt.Errorf("category %q: %s floor %d is not between 1 and %d cents", c.Key, p, f, MaxFloorCents)
			}
		}
	}
	slices.SortFunc(doc.Categories, func(a, b Category) int { return strings.Compare(a.Key, b.Key) })
	return doc.Categories, nil
}
