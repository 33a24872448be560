package attribution_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/attribution"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// A fill flush whose COMMIT went unanswered (a failover: it committed, the
// server did not hear so) is run again under its id and adds nothing the
// second time; the fills counted since are stored once. A flush that did
// not commit stores its counts when run again.
func TestFlushFillsIsIdempotent(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		w := newWorld(t, s, attribution.Rules{})
		p := w.pair("finance", 0)
		from := w.now()
		impressions := func() int64 {
			st, err := w.attr.AppStats(w.ctx, p.adv, from, w.now().Add(time.Hour))
			require.NoError(t, err)
			return st.Impressions
		}
		update := w.attr.Update
		lost := errors.New("the COMMIT went unanswered")
		for range 3 {
			w.fill(p.pub)
		}
		// Committed, but the answer is lost.
		w.attr.Update = func(ctx context.Context, fn func(ctx context.Context, tx attribution.Tx) error) error {
			if err := update(ctx, fn); err != nil {
				return err
			}
			return lost
		}
		require.ErrorIs(t, w.attr.FlushFills(w.ctx), lost)
		w.attr.Update = update
		w.fill(p.pub)
		require.NoError(t, w.attr.FlushFills(w.ctx))
		assert.EqualValues(t, 4, impressions(), "the unanswered flush was added twice, or lost")

		// Not committed at all: stored by the next flush.
		w.fill(p.pub)
		w.attr.Update = func(ctx context.Context, fn func(ctx context.Context, tx attribution.Tx) error) error { return lost }
		require.ErrorIs(t, w.attr.FlushFills(w.ctx), lost)
		assert.EqualValues(t, 5, impressions(), "a flush not known to be stored still counts as pending")
		w.attr.Update = update
		require.NoError(t, w.attr.FlushFills(w.ctx))
		assert.EqualValues(t, 5, impressions())
	})
}
