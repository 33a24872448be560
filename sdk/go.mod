module github.com/xpromo/xpromo/sdk

go 1.26.8
