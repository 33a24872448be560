package httpapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
)

// bodyGate: with every body slot taken, a request with a body is answered
// 503 unavailable with Retry-After before its body is read; one without a
// body is not held back; a slot is given back when its request is answered.
func TestBodyGate(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	s := New(Config{Store: nopStore{}, BodyReaders: 2, Now: func() time.Time { return now }})
	var got []string
	s.Router().Post("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		require.NoError(t, err)
		got = append(got, string(b))
		w.WriteHeader(http.StatusNoContent)
	})
	post := func(body io.Reader) *httptest.ResponseRecorder {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/echo", body)
		if body == nil {
			r.ContentLength, r.Body = 0, http.NoBody
		}
		s.ServeHTTP(w, r)
		return w
	}

	// A body is read ahead and handed on whole; the slot is given back.
	big := strings.Repeat("x", MaxBodyBytes+10) // handed on as read: the route's own limit decides
	assert.Equal(t, http.StatusNoContent, post(strings.NewReader(`{"a":1}`)).Code)
	assert.Equal(t, http.StatusNoContent, post(io.MultiReader(strings.NewReader(big))).Code) // chunked: no length
	assert.Equal(t, []string{`{"a":1}`, big}, got)
	assert.Empty(t, s.bodySlots, "every slot is given back")

	// Every slot taken.
	s.bodySlots <- struct{}{}
	s.bodySlots <- struct{}{}
	w := post(strings.NewReader(`{"a":1}`))
	assert.Equal(t, http.StatusServiceUnavailable, w.Code)
	assert.Equal(t, "1", w.Header().Get("Retry-After"))
	var body errorBody
	require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
	assert.Equal(t, apperr.Unavailable, body.Error.Code)
	assert.Len(t, got, 2, "the handler did not run")
	assert.Equal(t, http.StatusNoContent, post(nil).Code, "a request without a body takes no slot")
	<-s.bodySlots
	assert.Equal(t, http.StatusNoContent, post(strings.NewReader(`{}`)).Code, "a slot given back is taken again")
}
