package detach_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/detach"
)

type key struct{}

// The client going away does not stop the work; the deadline still does.
func TestKeepDeadline(t *testing.T) {
	dl := time.Now().Add(time.Hour)
	parent, cancelParent := context.WithDeadline(context.WithValue(context.Background(), key{}, "v"), dl)
	ctx, cancel := detach.KeepDeadline(parent)
	defer cancel()
	cancelParent()
	assert.NoError(t, ctx.Err(), "the parent's cancellation reached the detached context")
	got, ok := ctx.Deadline()
	assert.True(t, ok)
	assert.Equal(t, dl, got)
	assert.Equal(t, "v", ctx.Value(key{}))

	past, cancelPast := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancelPast()
	ctx2, cancel2 := detach.KeepDeadline(past)
	defer cancel2()
	<-ctx2.Done()
	assert.ErrorIs(t, ctx2.Err(), context.DeadlineExceeded)

	ctx3, cancel3 := detach.KeepDeadline(context.Background())
	defer cancel3()
	_, ok = ctx3.Deadline()
	assert.False(t, ok)
}
