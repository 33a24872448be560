module github.com/xpromo/xpromo/cli

go 1.26.8
