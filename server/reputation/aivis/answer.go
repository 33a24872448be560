package aivis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/xpromo/xpromo/server/jsonbound"
)

// answerLimits bound the model's answer before it is decoded: four fields of
// scalars, so anything nested or wide is refused whole (docs/limits.md).
var answerLimits = jsonbound.Limits{MaxDepth: 4, MaxValues: 64, MaxKeyBytes: 64}

// ParseAnswer reads the model's answer strictly: exactly one JSON object
// (surrounding whitespace allowed, nothing else: no code fence, no prose),
// with exactly the fields known (boolean), familiarity (integer 0–100),
// sentiment (integer −100–100) and summary (string of at most
// MaxSummaryRunes characters), each once. Anything else is an error
// wrapping ErrUnparseable.
func ParseAnswer(content string) (Answer, error) {
	var wire struct {
		Known       *bool           `json:"known"`
		Familiarity json.RawMessage `json:"familiarity"`
		Sentiment   json.RawMessage `json:"sentiment"`
		Summary     *string         `json:"summary"`
	}
	data := bytes.TrimSpace([]byte(content))
	if len(data) == 0 || data[0] != '{' {
		return Answer{}, fmt.Errorf("%w: not a JSON object", ErrUnparseable)
	}
	if err := jsonbound.Check(data, answerLimits); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	if err := checkKeys(data); err != nil {
		return Answer{}, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&wire); err != nil {
		return Answer{}, fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Answer{}, fmt.Errorf("%w: data after the object", ErrUnparseable)
	}
	if wire.Known == nil || wire.Familiarity == nil || wire.Sentiment == nil || wire.Summary == nil {
		return Answer{}, fmt.Errorf("%w: a field is missing (known, familiarity, sentiment and summary are required)", ErrUnparseable)
	}
	fam, err := boundedInt(wire.Familiarity, 0, 100)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: familiarity: %v", ErrUnparseable, err)
	}
	sent, err := boundedInt(wire.Sentiment, -100, 100)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: sentiment: %v", ErrUnparseable, err)
	}
	if !utf8.ValidString(*wire.Summary) || utf8.RuneCountInString(*wire.Summary) > MaxSummaryRunes {
		return Answer{}, fmt.Errorf("%w: summary longer than %d characters", ErrUnparseable, MaxSummaryRunes)
	}
	return Answer{Known: *wire.Known, Familiarity: fam, Sentiment: sent, Summary: *wire.Summary}, nil
}

// boundedInt accepts a JSON integer literal (not a string, no fraction,
// no exponent) in [lo, hi].
func boundedInt(raw json.RawMessage, lo, hi int) (int, error) {
	v, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%.40s is not an integer", raw)
	}
	if v < int64(lo) || v > int64(hi) {
		return 0, fmt.Errorf("%d is outside %d…%d", v, lo, hi)
	}
	return int(v), nil
}

// checkKeys refuses an object that names a key twice, or in another case
// than asked: encoding/json would silently take the last value, or match
// "KNOWN" to "known".
func checkKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // '{'
		return fmt.Errorf("%w: %v", ErrUnparseable, err)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return fmt.Errorf("%w: %v", ErrUnparseable, err)
		}
		key, _ := tok.(string)
		switch key {
		case "known", "familiarity", "sentiment", "summary":
		default:
			return fmt.Errorf("%w: unexpected field %q", ErrUnparseable, key)
		}
		if seen[key] {
			return fmt.Errorf("%w: field %q twice", ErrUnparseable, key)
		}
		seen[key] = true
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return fmt.Errorf("%w: %v", ErrUnparseable, err)
		}
	}
	return nil
}
