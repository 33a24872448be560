// Package sandbox is the reputation signals' test mode: built-in
// counterparts that answer, over the real wire formats, for apps with
// reserved names (RFC 2606, gate sandbox.Reserved), so that an app
// registered in test mode shows real reputation numbers with no model
// endpoint, no store and no appcast server configured.
//
// The counterparts are an http.RoundTripper that answers in memory:
//
//   - ModelBaseURL: an OpenAI-compatible chat-completions endpoint, asked by
//     the real aivis client;
//   - StoreBaseURL: the iTunes Search API's lookup, read by the real
//     storeratings client;
//   - any other reserved host: a Sparkle appcast with a Mac and a Windows
//     download of each release (the gate's sandbox packages declare SUFeedURL
//     https://appcast.example.com/<bundle id>.xml; a Windows app registers
//     an appcast_url on a reserved host), read by the real appcast client.
//
// The clients, the parsers and the scores are the real ones: the sandbox
// only produces answers. What it answers is chosen by magic words in the
// app's name or bundle id (the appcast: in the feed URL), documented in
// docs/reputation.md, "Test mode".
package sandbox

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	gatesandbox "github.com/xpromo/xpromo/server/gate/sandbox"
	"github.com/xpromo/xpromo/server/reputation/aivis"
	"github.com/xpromo/xpromo/server/reputation/appcast"
	"github.com/xpromo/xpromo/server/reputation/storeratings"
)

// The sandbox's endpoints (reserved hosts: nothing real answers there).
const (
	ModelBaseURL = "https://model.sandbox.test/v1"
	Model        = "xpromo-sandbox-model"
	StoreBaseURL = "https://itunes.sandbox.test"
)

// Magic words, matched case-insensitively in the app's name or bundle id
// (the model, the store) or in the feed URL (the appcast).
const (
	MagicUnknown  = "unknown"  // the model does not know the app; the store does not list it
	MagicDisliked = "disliked" // the model knows the app and its users dislike it
	MagicGarbled  = "garbled"  // the model answers prose: ai_visibility_unparseable
	MagicUnrated  = "unrated"  // the store lists the app without ratings: reviews_none
	MagicStale    = "stale"    // the appcast's last release is two years old: cadence 0
	MagicOffline  = "offline"  // every counterpart answers 503: the *_unavailable reasons
)

// Sandbox answers for reserved names. It is safe for concurrent use.
type Sandbox struct{ now func() time.Time }

// New returns a sandbox whose appcasts are dated around now().
func New(now func() time.Time) *Sandbox {
	if now == nil {
		now = time.Now
	}
	return &Sandbox{now: now}
}

// Transport answers requests to reserved hosts in memory and passes every
// other request to next (nil: they fail).
func (s *Sandbox) Transport(next http.RoundTripper) http.RoundTripper {
	return &transport{s: s, next: next}
}

// client is an http.Client whose reserved hosts are the sandbox's; other
// requests go through base (an outbound client: its timeout and rules).
func (s *Sandbox) client(base *http.Client) *http.Client {
	c := *base
	c.Transport = s.Transport(base.Transport)
	return &c
}

// AI returns the real aivis client pointed at the sandbox model; base is
// the outbound client its requests would otherwise go through.
func (s *Sandbox) AI(base *http.Client) *aivis.Client {
	c, err := aivis.New(aivis.Config{BaseURL: ModelBaseURL, Model: Model, HTTP: s.client(base)})
	if err != nil {
		panic(err) // constant configuration
	}
	return c
}

// Reviews returns the real storeratings client pointed at the sandbox
// store.
func (s *Sandbox) Reviews(base *http.Client) *storeratings.Client {
	c, err := storeratings.New(storeratings.Config{BaseURL: StoreBaseURL, HTTP: s.client(base)})
	if err != nil {
		panic(err)
	}
	return c
}

// Cadence returns the real appcast client whose feeds on reserved hosts are
// the sandbox's; other feeds are fetched through base.
func (s *Sandbox) Cadence(base *http.Client) *appcast.Client {
	return appcast.New(appcast.Config{HTTP: s.client(base), Now: s.now})
}

type transport struct {
	s    *Sandbox
	next http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !gatesandbox.Reserved(req.URL.Host) {
		if t.next == nil {
			return nil, fmt.Errorf("sandbox: no transport for %s", req.URL.Host)
		}
		return t.next.RoundTrip(req)
	}
	if req.Body != nil {
		defer req.Body.Close()
	}
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	model, _ := url.Parse(ModelBaseURL)
	store, _ := url.Parse(StoreBaseURL)
	switch {
	case req.URL.Host == model.Host && req.Method == http.MethodPost && req.URL.Path == model.Path+"/chat/completions":
		return t.s.chat(req)
	case req.URL.Host == store.Host && req.Method == http.MethodGet && req.URL.Path == "/lookup":
		return lookup(req)
	case req.URL.Host != model.Host && req.URL.Host != store.Host && req.Method == http.MethodGet:
		return t.s.appcast(req)
	}
	return answer(req, http.StatusNotFound, "text/plain", "not found\n"), nil
}

func answer(req *http.Request, status int, contentType, body string) *http.Response {
	return &http.Response{
		StatusCode: status, Status: fmt.Sprintf("%d %s", status, http.StatusText(status)),
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header:        http.Header{"Content-Type": {contentType}},
		Body:          io.NopCloser(strings.NewReader(body)),
		ContentLength: int64(len(body)), Request: req,
	}
}

func has(s, word string) bool { return strings.Contains(strings.ToLower(s), word) }

// chat answers a chat completion the way an OpenAI-compatible server does,
// with the JSON object the prompt asks for.
func (s *Sandbox) chat(req *http.Request) (*http.Response, error) {
	var body struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	raw, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(raw, &body); err != nil || len(body.Messages) < 2 {
		return answer(req, http.StatusBadRequest, "application/json", `{"error":{"message":"invalid request","type":"invalid_request_error"}}`), nil
	}
	var app aivis.App
	if err := json.Unmarshal([]byte(body.Messages[len(body.Messages)-1].Content), &app); err != nil {
		return answer(req, http.StatusBadRequest, "application/json", `{"error":{"message":"the user message is not the app's JSON","type":"invalid_request_error"}}`), nil
	}
	about := app.Name + " " + app.BundleID
	var content string
	switch {
	case has(about, MagicOffline):
		return answer(req, http.StatusServiceUnavailable, "application/json", `{"error":{"message":"overloaded","type":"server_error"}}`), nil
	case has(about, MagicGarbled):
		content = "Sure! " + app.Name + " is a fine app, I think."
	case has(about, MagicUnknown):
		content = `{"known": false, "familiarity": 0, "sentiment": 0, "summary": ""}`
	case has(about, MagicDisliked):
		content = mustJSON(aivis.Answer{Known: true, Familiarity: 70, Sentiment: -60, Summary: app.Name + " is known to the sandbox model; its users complain about it."})
	default:
		content = mustJSON(aivis.Answer{Known: true, Familiarity: 80, Sentiment: 60, Summary: app.Name + " is known to the sandbox model, and its users like it."})
	}
	completion := map[string]any{
		"id": "chatcmpl-sandbox", "object": "chat.completion", "created": s.now().Unix(), "model": Model,
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	}
	return answer(req, http.StatusOK, "application/json", mustJSON(completion)), nil
}

// lookup answers the iTunes Search API's lookup for a bundle id.
func lookup(req *http.Request) (*http.Response, error) {
	bundleID := req.URL.Query().Get("bundleId")
	result := map[string]any{
		"kind": "mac-software", "bundleId": bundleID, "trackId": 1000000001,
		"trackName": bundleID, "sellerName": "xpromo sandbox",
		"trackViewUrl": StoreBaseURL + "/app/id1000000001",
	}
	switch {
	case has(bundleID, MagicOffline):
		return answer(req, http.StatusServiceUnavailable, "text/plain", "Service Unavailable\n"), nil
	case has(bundleID, MagicUnknown):
		return answer(req, http.StatusOK, "text/javascript; charset=utf-8", `{"resultCount":0,"results":[]}`), nil
	case has(bundleID, MagicUnrated):
	default:
		result["averageUserRating"], result["userRatingCount"] = 4.5, 1200
	}
	return answer(req, http.StatusOK, "text/javascript; charset=utf-8",
		mustJSON(map[string]any{"resultCount": 1, "results": []any{result}})), nil
}

// appcast answers a Sparkle appcast: by default a release every quarter of
// the last year (cadence 80); MagicStale: two releases, the newest two years
// old (cadence 0).
func (s *Sandbox) appcast(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	if has(u, MagicOffline) {
		return answer(req, http.StatusServiceUnavailable, "text/plain", "Service Unavailable\n"), nil
	}
	now := s.now().UTC()
	var ages []time.Duration
	if has(u, MagicStale) {
		ages = []time.Duration{2 * appcast.Year, 2*appcast.Year + 90*24*time.Hour}
	} else {
		for i := range 4 {
			ages = append(ages, time.Duration(i)*appcast.Quarter+10*24*time.Hour)
		}
	}
	var b bytes.Buffer
	b.WriteString(`<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0" xmlns:sparkle="http://www.andymatuschak.org/xml-namespaces/sparkle">
<channel>
<title>xpromo sandbox appcast</title>
`)
	// Each release twice, as a feed serving both platforms does (WinSparkle,
	// and Sparkle 2, read sparkle:os): a Mac download and a Windows one, so
	// a Mac app's bundle feed and a Windows app's appcast_url score alike.
	for i, age := range ages {
		v := len(ages) - i
		for _, d := range []struct{ os, ext string }{{"macos", "zip"}, {"windows", "exe"}} {
			fmt.Fprintf(&b, `<item><title>Version 1.%d</title><pubDate>%s</pubDate><sparkle:version>%d</sparkle:version><sparkle:shortVersionString>1.%d</sparkle:shortVersionString><enclosure url="https://example.com/releases/%d.%s" sparkle:os="%s" length="1024" type="application/octet-stream"/></item>
`, v, now.Add(-age).Format(time.RFC1123Z), v, v, v, d.ext, d.os)
		}
	}
	b.WriteString("</channel>\n</rss>\n")
	return answer(req, http.StatusOK, "application/rss+xml; charset=utf-8", b.String()), nil
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
