package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
)

func TestLoneSurrogate(t *testing.T) {
	for raw, want := range map[string]bool{
		`{"a":"\ud800"}`:             true,
		`{"a":"\uDBFF"}`:             true,
		`{"a":"\udc00"}`:             true,
		`{"a":"x\ud83dy"}`:           true,
		`{"a":"\ud83d\u0041"}`:       true, // a high surrogate, then not a low one
		`{"a":"\ud83d\ud83d\ude00"}`: true, // the first high is alone
		`{"a":"\ud83d"}`:             true,
		`{"a":"\ude00\ud83d"}`:       true, // the wrong order
		`{"\ud800":1}`:               true, // in a name, too
		`{"a":"\ud83d\ude00"}`:       false,
		`{"a":"\uD83D\uDE00"}`:       false,
		`{"a":"\\ud800"}`:            false, // an escaped backslash, then text
		`{"a":"\\\ud83d\ude00"}`:     false,
		`{"a":"\u00e9\u0000"}`:       false, // not surrogates (the NUL is another rule)
		`{"a":"\ud8"}`:               false, // malformed: the decoder says so
		`{"a":"😀"}`:                  false,
		`{"ud800":"\"ud800"}`:        false,
	} {
		assert.Equal(t, want, loneSurrogate([]byte(raw)), raw)
	}
}

// registerSchema is the body schema of POST /v1/apps.
func registerSchema(t *testing.T) *openapi.Schema {
	t.Helper()
	op := documented()["POST /v1/apps"]
	require.NotNil(t, op)
	return op.Body
}

func TestCheckJSON(t *testing.T) {
	schema := registerSchema(t)
	long := strings.Repeat("é", 201)
	cases := []struct {
		body       string
		hard, soft string // codes, "" for none
	}{
		{`{"name":"Snip"}`, "", ""},
		{`{"name":"Snip 😀 \ud83d\ude00 é\u200d"}`, "", ""},
		{"{\"name\":\"\xff\"}", apperr.InvalidEncoding, ""},
		{`{"name":"a\u0000b"}`, apperr.InvalidEncoding, ""},
		{`{"x\u0000":1}`, apperr.InvalidEncoding, ""},
		{`{"name":"\ud800"}`, apperr.InvalidEncoding, ""},
		{`{"name":"a","name":"b"}`, apperr.DuplicateField, ""},
		{`{"name":"a","\u006eame":"b"}`, apperr.DuplicateField, ""}, // the same name, escaped
		{`{"x":{"y":1,"y":2}}`, apperr.DuplicateField, ""},
		{`[{"y":1},{"y":1,"y":2}]`, apperr.DuplicateField, ""},
		{`{"name":"a","name":`, apperr.DuplicateField, ""}, // found before the syntax error
		{`{"name":`, "", ""},                               // left to the decoder
		{`{"name":"` + long + `"}`, "", apperr.InvalidName},
		{`{"name":"Snip\u202egnp"}`, "", apperr.InvalidName},
		{`{"name":"Snip\nPro"}`, "", apperr.InvalidName},
		{`{"category":""}`, "", apperr.InvalidCategory},
		{`{"category":"` + strings.Repeat("a", 65) + `"}`, "", apperr.InvalidCategory},
		{`{"category":"games"}`, "", ""},
		{`{"unknown":"a\u0007"}`, "", apperr.InvalidCharacters},
		{`{"download_url":"https://example.com/` + strings.Repeat("a", 2048) + `"}`, "", apperr.InvalidURL},
		{`{"name":"` + long + `","domain":"a\u2066"}`, "", apperr.InvalidName}, // the first broken rule
	}
	for _, c := range cases {
		hard, soft := checkJSON([]byte(c.body), schema)
		assert.Equal(t, c.hard, codeOf(hard), "hard: %.60s", c.body)
		assert.Equal(t, c.soft, codeOf(soft), "soft: %.60s", c.body)
	}

	// Without a schema, only encoding, duplicates and characters.
	hard, soft := checkJSON([]byte(`{"a":"`+strings.Repeat("x", 10000)+`","b":"\u202e"}`), nil)
	assert.Nil(t, hard)
	assert.Equal(t, apperr.InvalidCharacters, codeOf(soft))

	// Arrays: maxItems, and the items' own rules.
	campaign := documented()["POST /v1/campaigns"].Body
	items := make([]string, 201)
	for i := range items {
		items[i] = fmt.Sprintf(`"k%d"`, i)
	}
	_, soft = checkJSON([]byte(`{"categories":[`+strings.Join(items, ",")+`]}`), campaign)
	assert.Equal(t, apperr.TooLong, codeOf(soft))
	_, soft = checkJSON([]byte(`{"categories":["games",""]}`), campaign)
	assert.Equal(t, apperr.InvalidCategory, codeOf(soft))
	var e *apperr.Error
	require.ErrorAs(t, soft, &e)
	assert.Equal(t, "categories[1]", e.Field)
}

func codeOf(err error) string {
	if err == nil {
		return ""
	}
	return apperr.Code(err)
}

// decodeJSON reports a broken rule only once the body decodes: an unknown
// field or a wrong type is named first.
func TestDecodeJSONOrder(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	var got []string
	s.Router().Post("/v1/apps", func(w http.ResponseWriter, r *http.Request) {
		var dst struct {
			Name string `json:"name"`
		}
		got = append(got, codeOf(decodeJSON(w, r, &dst)))
	})
	for _, body := range []string{
		`{"name":"a\u202e","extra":1}`, // unknown field first
		`{"name":"a\u202e"}`,           // then the rule
		`{"name":"a\u202e","name":"b"}`,
	} {
		r := httptest.NewRequest("POST", "/v1/apps", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		s.ServeHTTP(httptest.NewRecorder(), r)
	}
	assert.Equal(t, []string{apperr.UnknownField, apperr.InvalidName, apperr.DuplicateField}, got)
}

// SyncBuffer is a log buffer the server and a test share from any
// goroutine (exported for the package's external tests too).
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *SyncBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *SyncBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A client that goes away is a client abort: logged at INFO, counted as
// 499, no "internal error", and no answer written (one written would be
// stored for an Idempotency-Key and replayed).
func TestClientAbort(t *testing.T) {
	log := &SyncBuffer{}
	s := New(Config{Store: nopStore{}, Logger: slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	started := make(chan struct{})
	s.Router().Get("/v1/slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-r.Context().Done() // a store call the client's departure cancels
		s.writeErr(w, r, fmt.Errorf("postgres: reading: %w", r.Context().Err()))
	})
	srv := httptest.NewServer(s)
	defer srv.Close()

	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", srv.URL+"/v1/slow", nil)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		res, err := http.DefaultClient.Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	<-started
	cancel()
	require.ErrorIs(t, <-errc, context.Canceled)

	// The server finishes the request on its own goroutine: wait for its
	// access log line.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(log.String(), `"msg":"http request"`) && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	out := log.String()
	assert.Contains(t, out, `"level":"INFO","msg":"client closed request"`)
	assert.Contains(t, out, `"status":499`)
	assert.NotContains(t, out, `"level":"ERROR"`)
	assert.NotContains(t, out, "internal error")

	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	assert.Contains(t, rec.Body.String(), `xpromo_http_requests_total{method="GET",route="/v1/slow",status="499"} 1`)
}

// The same failure without a departed client stays an internal error.
func TestInternalErrorIsNotAnAbort(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	s.Router().Get("/v1/fail", func(w http.ResponseWriter, r *http.Request) {
		s.writeErr(w, r, errors.New("postgres: reading: "+context.Canceled.Error()))
	})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/v1/fail", nil))
	assert.Equal(t, http.StatusInternalServerError, rec.Code)
}

// Error messages quote what the client sent; they are cut at
// maxMessageRunes characters.
func TestMessagesAreClipped(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest("GET", "/"+strings.Repeat("é", 5000), nil))
	var body errorBody
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	assert.Equal(t, apperr.NotFound, body.Error.Code)
	assert.Equal(t, maxMessageRunes+1, len([]rune(body.Error.Message)))
	assert.True(t, strings.HasSuffix(body.Error.Message, "…"))
}

// Through the in-process transport (the MCP tools' SDK client), an aborted
// request is the context's error, as a network client sees it; the abort
// does not escape as a panic.
func TestInProcessAbortIsTheContextError(t *testing.T) {
	s := New(Config{Store: nopStore{}})
	s.Router().Get("/v1/slow", func(w http.ResponseWriter, r *http.Request) {
		s.writeErr(w, r, fmt.Errorf("store: %w", r.Context().Err()))
	})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://in-process/v1/slow", nil)
	require.NoError(t, err)
	res, err := s.InProcessTransport().RoundTrip(req)
	assert.Nil(t, res)
	assert.ErrorIs(t, err, context.Canceled)
}
