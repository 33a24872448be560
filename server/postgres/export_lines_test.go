package postgres

import "github.com/xpromo/xpromo/server/ledger"

// LinesQuery is the ledger page query of Lines (the plan test explains it).
func LinesQuery(account string, q ledger.LineQuery) (string, []any) { return linesQuery(account, q) }
