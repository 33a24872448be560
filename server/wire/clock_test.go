package wire_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/wire"
)

func TestClock(t *testing.T) {
	base := time.Date(2026, 11, 21, 9, 0, 0, 0, time.UTC)
	now := func() time.Time { return base }

	c := wire.NewClock(now, true)
	assert.Equal(t, base, c.Now())
	got, err := c.Advance(48 * time.Hour)
	require.NoError(t, err)
	assert.Equal(t, base.Add(48*time.Hour), got)
	assert.Equal(t, base.Add(48*time.Hour), c.Now())
	assert.Equal(t, 48*time.Hour, c.Offset())
	for _, d := range []time.Duration{0, -time.Second, time.Millisecond, wire.MaxClockAdvance + time.Second} {
		_, err := c.Advance(d)
		assert.Equal(t, apperr.InvalidDuration, apperr.Code(err), "%s", d)
	}
	assert.Equal(t, 48*time.Hour, c.Offset(), "refused moves change nothing")

	live := wire.NewClock(now, false)
	_, err = live.Advance(time.Hour)
	assert.Equal(t, apperr.TestModeOnly, apperr.Code(err))
	assert.Equal(t, 403, apperr.HTTPStatus(err))
	assert.Equal(t, base, live.Now())
	assert.False(t, live.TestMode())
}
