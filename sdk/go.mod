module github.com/xpromo/xpromo/sdk

go 1.26.8

require (
	github.com/hashicorp/go-retryablehttp v0.7.8
	github.com/standard-webhooks/standard-webhooks/libraries v0.0.1
	golang.org/x/sys v0.49.0
)

require (
	github.com/decred/dcrd/dcrec/secp256k1/v4 v4.4.1 // indirect
	github.com/hashicorp/go-cleanhttp v0.5.2 // indirect
	golang.org/x/crypto v0.58.0 // indirect
)
