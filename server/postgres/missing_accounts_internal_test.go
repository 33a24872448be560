package postgres

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/ledger"
)

// LockAccounts' request to create accounts is a conflict the store runs
// again; one that reaches a client (its unit of work could not run again,
// the database being lost) is a 503 unavailable, not a 500.
func TestMissingAccountsIsRetriedOrUnavailable(t *testing.T) {
	err := fmt.Errorf("a unit's failure: %w", &missingAccounts{ids: []string{"platform:adjustments:02"}})
	assert.True(t, errors.Is(err, ledger.ErrConflict))
	assert.True(t, retryable(err))
	assert.Equal(t, 503, apperr.HTTPStatus(err))
	assert.Equal(t, apperr.Unavailable, apperr.Code(err))
}
