// Package slots is the xpromo SDK inside a desktop app: one Agent does the
// publisher's side (fill the app's lifecycle slots with signed fill
// requests, render through the app's Renderer, sign and report clicks,
// hand the click token over to the advertised app) and the advertiser's
// side (find the token on first launch through the handoff channels,
// countersign it and claim the install, send signed heartbeats). Every
// report goes through a durable offline queue (Queue), delivered in order,
// at least once, with idempotency keys.
//
// The handoff channels are deterministic: a per-user local inbox (Inbox),
// the macOS download provenance (kMDItemWhereFroms, with the quarantine
// event linking an app to its disk image) and the Windows Mark of the Web
// (Zone.Identifier). Parsing lives in OS-independent files
// (ParseWhereFroms, ParseQuarantine, ParseZoneIdentifier, TokenFromURL);
// the per-OS files only read the bytes, without cgo.
//
// The token format is package attribution, the wire types are
// xpromo/sdkwire.go; docs/sdk.md is the guide and docs/protocol.md the
// protocol.
package slots
