// Package openapi embeds the OpenAPI 3.1 description of the xpromo REST API
// v1. The document is hand-written from the API contract and served unchanged
// at GET /openapi.json; its path set is the router's route set, with the /v1
// prefix written into each path (servers: [{"url": "/"}]).
package openapi

import _ "embed"

// Document is openapi.json, byte for byte. Serve it as application/json; do
// not re-marshal it.
//
//go:embed openapi.json
var Document []byte

// ContentType is the media type to serve Document with.
const ContentType = "application/json"
