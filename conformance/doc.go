// Package conformance is the black-box conformance suite of the xpromo REST
// API v1: what the API document and the product decisions promise, checked
// against a running server through the Go SDK (sdk/xpromo), grouped by area
// (auth and scope, errors, rate limits, idempotency, …).
//
// The suite never reads a server's internals. Where a check needs operator
// powers (approving an app) or test-mode facilities (completing a test
// checkout, moving the clock), it uses the documented admin and test-mode
// endpoints, which an implementation must provide to be tested: the
// conformance profile (docs/conformance.md).
//
// Run it from a test:
//
//	func TestConformance(t *testing.T) {
//		report := conformance.NewReport()
//		conformance.Run(t, conformance.Target{Kind: "external", BaseURL: url, AdminToken: token}, report)
//		report.WriteTable(os.Stdout)
//	}
//
// The module's own tests run it against the reference server in-process
// (default), against any server named by XPROMO_CONFORMANCE_URL, and against
// the reference server's container image (XPROMO_CONFORMANCE_CONTAINER=1);
// see conformance_test.go.
package conformance
