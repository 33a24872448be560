module github.com/xpromo/xpromo/examples

go 1.26.8
