// Package guide embeds what the server publishes for integrators, so that
// a third party holding only a server's URL can read all of it:
// integration-guide.md (GET /v1/integration-guide), the protocol
// specification docs/protocol.md (GET /v1/integration-guide/protocol.md)
// and its test vectors sdk/attribution/testdata/vectors.json
// (GET /v1/integration-guide/vectors.json).
//
// Those files are the ones people edit; go:embed cannot reach outside the
// server module, so this package keeps copies and TestCopiesMatchRoot fails
// when one differs (`make guide` copies them).
package guide

import _ "embed"

//go:embed integration-guide.md
var Markdown []byte

// Protocol is docs/protocol.md.
//
//go:embed protocol.md
var Protocol []byte

// Vectors is sdk/attribution/testdata/vectors.json.
//
//go:embed vectors.json
var Vectors []byte
