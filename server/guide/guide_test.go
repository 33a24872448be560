package guide

import (
	"bytes"
	"os"
	"testing"
)

func TestCopyMatchesRoot(t *testing.T) {
	root, err := os.ReadFile("../../integration-guide.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(root, Markdown) {
		t.Fatal("server/guide/integration-guide.md differs from the root integration-guide.md: run `make guide`")
	}
}
