package xpromo

import (
	"fmt"
	"iter"
)

// paginate is the iterator behind LedgerLines and Events: it reads the page
// at cursor (from the given one on), yields its items, and follows next
// until next says there is no more. A page that announces more without a
// new cursor ends the iteration with an error rather than looping for ever.
// what names the list in that error ("ledger of app_…").
func paginate[T any](cursor, what string, read func(cursor string) (items []T, next string, more bool, err error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		var zero T
		cursor := cursor // each iteration starts again from the first cursor
		for {
			items, next, more, err := read(cursor)
			if err != nil {
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if !more {
				return
			}
			if next == "" || next == cursor {
				yield(zero, fmt.Errorf("xpromo: %s: the server announced more without a new cursor", what))
				return
			}
			cursor = next
		}
	}
}
