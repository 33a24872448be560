module github.com/xpromo/xpromo/conformance

go 1.26.8
