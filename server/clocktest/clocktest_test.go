package clocktest_test

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/clocktest"
)

func TestClockStandsStillUntilAdvanced(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := clocktest.New(start)
	assert.Equal(t, start, c.Now())
	assert.Equal(t, start, c.Now(), "reading the clock does not move it")
	c.Advance(90 * time.Minute)
	assert.Equal(t, start.Add(90*time.Minute), c.Now())
	c.Advance(-time.Hour)
	assert.Equal(t, start.Add(30*time.Minute), c.Now())
}

func TestClockIsUTCWhateverTheStart(t *testing.T) {
	paris := time.FixedZone("CET", 3600)
	c := clocktest.New(time.Date(2026, 11, 21, 11, 0, 0, 0, paris))
	assert.Equal(t, time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC), c.Now())
	assert.Equal(t, time.UTC, c.Now().Location())
}

// Advances from many goroutines while others read all land (go test -race
// checks the reads and writes are synchronised).
func TestClockConcurrentAdvances(t *testing.T) {
	start := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	c := clocktest.New(start)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				c.Advance(time.Second)
				_ = c.Now()
			}
		})
	}
	wg.Wait()
	assert.Equal(t, start.Add(800*time.Second), c.Now())
}
