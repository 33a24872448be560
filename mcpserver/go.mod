module github.com/xpromo/xpromo/mcpserver

go 1.26.8
