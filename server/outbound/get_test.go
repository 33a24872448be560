package outbound_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/outbound"
)

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			w.Write([]byte(r.Header.Get("Accept")))
		case "/big":
			w.Write([]byte(strings.Repeat("x", 11)))
		default:
			http.Error(w, "no", http.StatusTeapot)
		}
	}))
	t.Cleanup(srv.Close)
	c := outbound.New(outbound.Options{TestOnlyAllowLoopback: true})
	ctx := context.Background()

	body, err := outbound.Get(ctx, c, srv.URL+"/ok", "text/xml", 10)
	require.NoError(t, err)
	assert.Equal(t, "text/xml", string(body), "the Accept header is sent")

	body, err = outbound.Get(ctx, c, srv.URL+"/ok", "0123456789", 10)
	require.NoError(t, err, "exactly max bytes is fine")
	assert.Len(t, body, 10)

	_, err = outbound.Get(ctx, c, srv.URL+"/big", "", 10)
	assert.ErrorIs(t, err, outbound.ErrResponseTooLarge)

	_, err = outbound.Get(ctx, c, srv.URL+"/teapot", "", 10)
	var se *outbound.StatusError
	require.True(t, errors.As(err, &se), "%v", err)
	assert.Equal(t, http.StatusTeapot, se.Code)

	_, err = outbound.Get(ctx, c, "ftp://example.com/x", "", 10)
	assert.ErrorContains(t, err, "not an absolute http(s) URL")

	_, err = outbound.Get(ctx, outbound.New(outbound.Options{}), srv.URL+"/ok", "", 10)
	assert.ErrorIs(t, err, outbound.ErrForbiddenAddress, "the production client refuses loopback")
}
