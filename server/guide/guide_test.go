package guide

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"testing"
)

func TestCopiesMatchRoot(t *testing.T) {
	for root, copy := range map[string][]byte{
		"../../integration-guide.md":                  Markdown,
		"../../docs/protocol.md":                      Protocol,
		"../../sdk/attribution/testdata/vectors.json": Vectors,
	} {
		want, err := os.ReadFile(root)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(want, copy) {
			t.Errorf("server/guide's copy of %s differs from it: run `make guide`", root)
		}
	}
	if !json.Valid(Vectors) {
		t.Error("vectors.json is not JSON")
	}
}

// The served guide is read without the repository: every link it makes
// to the vectors and the protocol is an absolute path the server serves,
// and none is relative to the repository.
func TestGuideLinksServedFiles(t *testing.T) {
	for _, path := range []string{"/v1/integration-guide/vectors.json", "/v1/integration-guide/protocol.md"} {
		if !bytes.Contains(Markdown, []byte("("+path+")")) {
			t.Errorf("the guide does not link %s", path)
		}
	}
	links := regexp.MustCompile(`\]\(([^)]+)\)`).FindAllSubmatch(Markdown, -1)
	for _, l := range links {
		target := string(l[1])
		if !regexp.MustCompile(`^(/|https?://|#)`).MatchString(target) {
			t.Errorf("the guide links %q, a path relative to the repository the served copy cannot reach", target)
		}
	}
}
