package apperr

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the catalogue table in docs/errors.md from the code")

const (
	docPath    = "../../docs/errors.md"
	beginTable = "<!-- catalogue:begin (generated from server/apperr; go test ./apperr -update) -->"
	endTable   = "<!-- catalogue:end -->"
)

func renderTable() string {
	var b strings.Builder
	b.WriteString("| code | status | condition |\n|---|---|---|\n")
	for _, e := range All() {
		fmt.Fprintf(&b, "| `%s` | %d | %s |\n", e.Code, e.Status, e.Condition)
	}
	return b.String()
}

// The catalogue in docs/errors.md and the one in code must be the same list.
func TestCatalogueMatchesDocs(t *testing.T) {
	raw, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	begin, end := strings.Index(doc, beginTable), strings.Index(doc, endTable)
	if begin < 0 || end < begin {
		t.Fatalf("%s must contain the markers %q and %q", docPath, beginTable, endTable)
	}
	got := doc[begin+len(beginTable)+1 : end]
	want := renderTable()
	if got == want {
		return
	}
	if *update {
		doc = doc[:begin+len(beginTable)+1] + want + doc[end:]
		if err := os.WriteFile(docPath, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/errors.md disagrees with the catalogue in code; run `go test ./apperr -update` and review.\nwant:\n%s\ngot:\n%s", want, got)
}

func TestEveryEntryIsComplete(t *testing.T) {
	for _, e := range All() {
		if e.Status < 400 || e.Status > 599 || e.Condition == "" || strings.Contains(e.Code, " ") {
			t.Errorf("incomplete catalogue entry %+v", e)
		}
	}
}

func TestNewRefusesUncataloguedCodes(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("New must panic on a code missing from the catalogue")
		}
	}()
	New("no_such_code", "x")
}
