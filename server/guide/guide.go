// Package guide embeds integration-guide.md, the SDK quickstart served by
// GET /v1/integration-guide.
//
// The repository root's integration-guide.md is the file people edit; go:embed
// cannot reach outside the server module, so this package keeps a copy and
// TestCopyMatchesRoot fails when the two differ (`make guide` copies it).
package guide

import _ "embed"

//go:embed integration-guide.md
var Markdown []byte
