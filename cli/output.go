package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// eur formats cents as euros for people: "EUR 1,234.56", "EUR -12.00".
// JSON and CSV keep the API's integer cents.
func eur(cents int64) string {
	sign := ""
	u := uint64(cents)
	if cents < 0 {
		sign = "-"
		u = uint64(-(cents + 1)) + 1 // no overflow at math.MinInt64
	}
	whole, frac := u/100, u%100
	return fmt.Sprintf("EUR %s%s.%02d", sign, thousands(whole), frac)
}

// eurPtr formats an optional amount; nil is none.
func eurPtr(cents *int64, none string) string {
	if cents == nil {
		return none
	}
	return eur(*cents)
}

// thousands groups digits by three with commas.
func thousands(n uint64) string {
	s := strconv.FormatUint(n, 10)
	if len(s) <= 3 {
		return s
	}
	var b strings.Builder
	lead := len(s) % 3
	if lead > 0 {
		b.WriteString(s[:lead])
	}
	for i := lead; i < len(s); i += 3 {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(s[i : i+3])
	}
	return b.String()
}

// percent formats a share (0.25) as a percentage ("25.0%").
func percent(share float64) string {
	return strconv.FormatFloat(share*100, 'f', 1, 64) + "%"
}

// ts formats a time as the API does (RFC 3339, UTC).
func ts(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// orDash shows an empty or missing value as "-".
func orDash(s *string) string {
	if s == nil || *s == "" {
		return "-"
	}
	return *s
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

// table writes aligned columns (text/tabwriter); rows are tab-separated
// cells. Cells are sanitised: a tab or newline inside one would break the
// alignment.
type table struct{ tw *tabwriter.Writer }

func newTable(w io.Writer) *table {
	return &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
}

func (t *table) row(cells ...string) {
	for i, c := range cells {
		if i > 0 {
			io.WriteString(t.tw, "\t")
		}
		io.WriteString(t.tw, cell(c))
	}
	io.WriteString(t.tw, "\n")
}

func (t *table) flush() error { return t.tw.Flush() }

func cell(s string) string {
	if strings.ContainsAny(s, "\t\r\n") {
		s = strings.NewReplacer("\t", " ", "\r", " ", "\n", " ").Replace(s)
	}
	return s
}

// kv writes key/value rows, aligned.
func kv(w io.Writer, rows ...[2]string) error {
	t := newTable(w)
	for _, r := range rows {
		t.row(r[0], r[1])
	}
	return t.flush()
}

// compactJSON shows a JSON value on one line.
func compactJSON(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "-"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return string(raw)
	}
	if err := enc.Encode(v); err != nil {
		return string(raw)
	}
	return strings.TrimSpace(b.String())
}

// writeJSON prints a value the CLI made itself (not an API answer), indented.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}
