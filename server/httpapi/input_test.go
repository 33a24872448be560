package httpapi_test

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/xpromo/xpromo/sdk/xpromo"
	"github.com/xpromo/xpromo/server/apperr"
	"github.com/xpromo/xpromo/server/openapi"
	"github.com/xpromo/xpromo/server/storage"
	"github.com/xpromo/xpromo/server/storage/storagetest"
)

// The input policy, tried from outside (docs/errors.md, "Input policy"):
// every class of bad input the issue found, sent to a real server on each
// store, with and without credentials. Each must answer its catalogued 4xx
// code: a 2xx or a 5xx fails the test. The cases are generated from
// openapi.json (every operation, path parameter, query parameter and body
// field), so an operation or field added later is covered, and every bound
// the document declares is shown to be enforced.

// probe is one request of the policy test and the refusal it must get.
type probe struct {
	name   string
	method string
	path   string // with its query
	auth   string // bearer token, "" for none
	body   string // sent as application/json when not ""
	// chunked sends body without a Content-Length; size, when not 0,
	// sends that many zero bytes (with their Content-Length) instead.
	chunked bool
	size    int64
	header  map[string]string
	status  int
	code    string
}

// inputEnv is a server on one store with an app, a campaign of it and an
// open checkout session: real targets for every path parameter.
type inputEnv struct {
	*testServer
	app, key, job, campaign, session string
	docs                             map[string]opDoc
}

// opDoc is what the test reads of an operation besides openapi.Operations:
// whether it is public.
type opDoc struct{ public bool }

func newInputEnv(t *testing.T, s storage.Store) *inputEnv {
	t.Helper()
	e := &inputEnv{testServer: serve(t, s, time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC), unlimited)}
	reg := e.register(snip())
	e.app, e.key, e.job = reg.AppID, reg.APIKey, reg.ScoringJobID

	res := e.do("POST", "/v1/campaigns", e.key, map[string]any{"app_id": e.app, "categories": []string{"games"}, "daily_budget_cents": 1000})
	require.Equal(t, http.StatusCreated, res.status, res.body)
	var c xpromo.Campaign
	res.decode(t, &c)
	e.campaign = c.CampaignID

	res = e.do("POST", "/v1/apps/"+e.app+"/top-up", e.key, map[string]any{"amount_cents": 5000})
	require.Equal(t, http.StatusOK, res.status, res.body)
	var top xpromo.TopUpResponse
	res.decode(t, &top)
	e.session = top.CheckoutURL[strings.LastIndex(top.CheckoutURL, "/")+1:]

	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(openapi.Document, &doc))
	e.docs = map[string]opDoc{}
	for _, item := range doc.Paths {
		for _, raw := range item {
			var op struct {
				ID       string            `json:"operationId"`
				Security *[]map[string]any `json:"security"`
			}
			if json.Unmarshal(raw, &op) == nil && op.ID != "" {
				e.docs[op.ID] = opDoc{public: op.Security != nil && len(*op.Security) == 0}
			}
		}
	}
	return e
}

// credentials is what an operation needs to get past authentication.
func (e *inputEnv) credentials(op *openapi.Operation) string {
	switch {
	case e.docs[op.ID].public:
		return ""
	case strings.HasPrefix(op.Path, "/v1/admin/"):
		return adminToken
	}
	return e.key
}

// pathParam is a real value of each path parameter.
func (e *inputEnv) pathParam(name string) string {
	return map[string]string{
		"app_id": e.app, "campaign_id": e.campaign, "session_id": e.session, "job_id": e.job,
		"key_id": "sk_none", "chain_id": "chn_none", "category": "games",
		"endpoint_id": "we_none", "event_id": "evt_none", "complaint_id": "cmpl_none",
	}[name]
}

var paramRe = regexp.MustCompile(`\{[a-z_]+\}`)

// target is op's path with real parameters, except bad (escaped) for the
// parameter named in.
func (e *inputEnv) target(op *openapi.Operation, in, bad string) string {
	return paramRe.ReplaceAllStringFunc(op.Path, func(p string) string {
		name := strings.Trim(p, "{}")
		if name == in {
			return bad
		}
		return url.PathEscape(e.pathParam(name))
	})
}

func operations(t *testing.T) []*openapi.Operation {
	t.Helper()
	ops, err := openapi.Operations()
	require.NoError(t, err)
	require.NotEmpty(t, ops)
	return ops
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

// try sends p through the client that checks every exchange against
// openapi.json.
func (e *inputEnv) try(p probe) response {
	e.t.Helper()
	var body io.Reader
	switch {
	case p.size > 0:
		body = io.LimitReader(zeros{}, p.size)
	case p.chunked:
		body = io.MultiReader(strings.NewReader(p.body)) // a reader of unknown length
	case p.body != "":
		body = strings.NewReader(p.body)
	}
	req, err := http.NewRequest(p.method, e.url+p.path, body)
	require.NoError(e.t, err, p.name)
	if p.size > 0 {
		req.ContentLength = p.size
	}
	if p.body != "" || p.size > 0 {
		req.Header.Set("Content-Type", "application/json")
	}
	if p.auth != "" {
		req.Header.Set("Authorization", "Bearer "+p.auth)
	}
	for k, v := range p.header {
		req.Header[http.CanonicalHeaderKey(k)] = []string{v}
	}
	res, err := e.client.Do(req)
	require.NoError(e.t, err, p.name)
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	require.NoError(e.t, err, p.name)
	return response{status: res.StatusCode, header: res.Header, body: strings.TrimSuffix(string(b), "\n")}
}

// check sends every probe and requires its status and code.
func (e *inputEnv) check(probes []probe) {
	e.t.Helper()
	for _, p := range probes {
		res := e.try(p)
		ok := assert.True(e.t, res.status >= 400 && res.status < 500, "%s: %s %s answered %d: %.300s", p.name, p.method, p.path, res.status, res.body)
		ok = ok && assert.Equal(e.t, p.status, res.status, "%s: %s %s: %.300s", p.name, p.method, p.path, res.body)
		if ok && p.code != "" {
			var er xpromo.ErrorResponse
			if assert.NoError(e.t, json.Unmarshal([]byte(res.body), &er), "%s: %s", p.name, res.body) {
				assert.Equal(e.t, p.code, er.Error.Code, "%s: %s %s: %s", p.name, p.method, p.path, er.Error.Message)
			}
		}
	}
}

// variants returns p as sent with op's credentials and, for an operation
// that needs some, without: the policy comes before authentication.
func (e *inputEnv) variants(op *openapi.Operation, p probe) []probe {
	p.auth = e.credentials(op)
	out := []probe{p}
	if p.auth != "" {
		anon := p
		anon.name += " (no credentials)"
		anon.auth = ""
		out = append(out, anon)
	}
	return out
}

// The request line: bad bytes in every path parameter and in the query,
// query parameters an operation does not define or repeats, over-long path
// parameters.
func TestInputPolicyPathAndQuery(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newInputEnv(t, s)
		var probes []probe
		for _, op := range operations(t) {
			for name, schema := range op.PathParams {
				for _, bad := range []string{"%00", "a%00b", "%FF", "%C0%80", "%ED%A0%80"} {
					probes = append(probes, e.variants(op, probe{
						name: op.ID + " " + name + "=" + bad, method: op.Method, path: e.target(op, name, bad),
						status: 400, code: apperr.InvalidEncoding,
					})...)
				}
				require.NotNil(t, schema.MaxLength, "%s: path parameter %s has no maxLength", op.ID, name)
				probes = append(probes, e.variants(op, probe{
					name: op.ID + " " + name + " too long", method: op.Method, path: e.target(op, name, strings.Repeat("a", *schema.MaxLength+1)),
					status: 404, code: apperr.NotFound,
				})...)
			}
			path := e.target(op, "", "")
			for _, q := range []struct{ query, code string }{
				{"?undefined=1", apperr.UnknownParameter},
				{"?%zz=1", apperr.InvalidEncoding},
				{"?a=%00", apperr.InvalidEncoding},
				{"?a=%FF", apperr.InvalidEncoding},
			} {
				probes = append(probes, e.variants(op, probe{name: op.ID + " " + q.query, method: op.Method, path: path + q.query, status: 400, code: q.code})...)
			}
			for name := range op.Query {
				value := map[string]string{"from": "2026-11-01", "to": "2026-11-20", "limit": "10", "cursor": "abc", "period": "last_7_days",
					"type": "chain.cleared", "since": "2026-11-01T00:00:00Z", "wait": "0", "event_id": "evt_none", "status": "open", "token": "abc",
					"state": "cleared", "role": "publisher", "campaign_id": "cmp_none"}[name]
				require.NotEmpty(t, value, "%s: a value for query parameter %s", op.ID, name)
				if op.Query[name].Matches("array") {
					continue // repeated by design (the events API's type)
				}
				probes = append(probes, e.variants(op, probe{
					name: op.ID + " " + name + " twice", method: op.Method, path: path + "?" + name + "=" + value + "&" + name + "=" + value,
					status: 400, code: apperr.RepeatedParameter,
				})...)
				probes = append(probes, e.variants(op, probe{
					name: op.ID + " " + name + " NUL", method: op.Method, path: path + "?" + name + "=" + value + "%00",
					status: 400, code: apperr.InvalidEncoding,
				})...)
			}
		}
		require.Greater(t, len(probes), 300)
		t.Logf("%d probes of the request line", len(probes))
		e.check(probes)

		// The issue's cases, by name.
		e.check([]probe{
			{name: "chain NUL", method: "GET", path: "/v1/chains/%00", status: 400, code: apperr.InvalidEncoding},
			{name: "chain NUL, with a key", method: "GET", path: "/v1/chains/%00", auth: e.key, status: 400, code: apperr.InvalidEncoding},
			{name: "pause NUL", method: "POST", path: "/v1/campaigns/%00/pause", auth: e.key, status: 400, code: apperr.InvalidEncoding},
			{name: "checkout page NUL", method: "GET", path: "/test/checkout/%00", status: 400, code: apperr.InvalidEncoding},
			{name: "checkout NUL", method: "POST", path: "/test/checkout/%00", status: 400, code: apperr.InvalidEncoding},
			{name: "from twice", method: "GET", path: "/v1/apps/" + e.app + "/ledger?from=2026-11-01&from=2026-11-02", auth: e.key, status: 400, code: apperr.RepeatedParameter},
			{name: "period twice", method: "GET", path: "/v1/apps/" + e.app + "/stats?period=last_7_days&period=last_90_days", auth: e.key, status: 400, code: apperr.RepeatedParameter},
			{name: "limit twice", method: "GET", path: "/v1/admin/audit?limit=1&limit=2", auth: adminToken, status: 400, code: apperr.RepeatedParameter},
			{name: "a parameter score does not take", method: "GET", path: "/v1/apps/" + e.app + "/score?verbose=1", auth: e.key, status: 400, code: apperr.UnknownParameter},
			// The bounds of the query parameters, enforced by their handlers.
			{name: "from too long", method: "GET", path: "/v1/apps/" + e.app + "/ledger?from=2026-11-011", auth: e.key, status: 422, code: apperr.InvalidDate},
			{name: "cursor too long", method: "GET", path: "/v1/apps/" + e.app + "/ledger?cursor=" + strings.Repeat("a", 257), auth: e.key, status: 422, code: apperr.InvalidCursor},
			{name: "limit 0", method: "GET", path: "/v1/apps/" + e.app + "/ledger?limit=0", auth: e.key, status: 422, code: apperr.InvalidLimit},
			{name: "limit 1001", method: "GET", path: "/v1/apps/" + e.app + "/ledger?limit=1001", auth: e.key, status: 422, code: apperr.InvalidLimit},
			{name: "audit limit 0", method: "GET", path: "/v1/admin/audit?limit=0", auth: adminToken, status: 422, code: apperr.InvalidLimit},
			{name: "audit limit 1001", method: "GET", path: "/v1/admin/audit?limit=1001", auth: adminToken, status: 422, code: apperr.InvalidLimit},
		})

		// What the policy lets through.
		for _, path := range []string{
			"/v1/apps/" + e.app + "/ledger?from=2026-11-01&to=2026-11-30&limit=10",
			"/v1/apps/" + e.app + "/stats?period=last_7_days",
			"/v1/apps/" + e.app + "/score",
		} {
			res := e.do("GET", path, e.key, nil)
			assert.Equal(t, http.StatusOK, res.status, "%s: %s", path, res.body)
		}
	})
}

// A body on an operation that takes none: small, chunked, or 10 MiB.
func TestInputPolicyBodiesWhereNoneBelongs(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newInputEnv(t, s)
		var probes []probe
		for _, op := range operations(t) {
			if op.Body != nil {
				continue
			}
			path := e.target(op, "", "")
			probes = append(probes, e.variants(op, probe{name: op.ID + " {}", method: op.Method, path: path, body: `{}`, status: 400, code: apperr.BodyNotAllowed})...)
			probes = append(probes, e.variants(op, probe{name: op.ID + " chunked", method: op.Method, path: path, body: `{"a":1}`, chunked: true, status: 400, code: apperr.BodyNotAllowed})...)
			if op.Method == "POST" {
				probes = append(probes, probe{name: op.ID + " 10 MiB", method: op.Method, path: path, auth: e.credentials(op), size: 10 << 20, status: 400, code: apperr.BodyNotAllowed})
			}
		}
		require.Greater(t, len(probes), 40)
		t.Logf("%d probes with a body where none belongs", len(probes))
		e.check(probes)

		// Nothing ran: the campaign is still active-or-throttled, the key
		// still works, the session is still open.
		res := e.do("GET", "/v1/apps/"+e.app+"/score", e.key, nil)
		assert.Equal(t, http.StatusOK, res.status, "the key was not rotated: %s", res.body)
		page := e.send(request{method: "GET", path: "/test/checkout/" + e.session, raw: true})
		assert.Contains(t, page.body, "<strong>open</strong>", "the checkout was not completed")
		assert.Empty(t, e.ledger(e.app, e.key).Lines)

		// Without a body, they run.
		res = e.do("POST", "/v1/campaigns/"+e.campaign+"/pause", e.key, nil)
		assert.Equal(t, http.StatusOK, res.status, res.body)
		assert.Equal(t, "paused", res.json(t)["status"])
	})
}

// ledger reads an app's ledger page.
func (e *inputEnv) ledger(app, key string) xpromo.LedgerPage {
	e.t.Helper()
	res := e.do("GET", "/v1/apps/"+app+"/ledger", key, nil)
	require.Equal(e.t, http.StatusOK, res.status, res.body)
	var p xpromo.LedgerPage
	res.decode(e.t, &p)
	return p
}

// field is one member of a JSON object, its value raw JSON.
type field struct{ name, raw string }

// bodyBase is a body an operation accepts (valid), or at least one that
// decodes (not valid: a signed token or a transition is needed), to which
// one field at a time is changed.
type bodyBase struct {
	fields []field
	valid  bool
}

func (e *inputEnv) bases(t *testing.T) map[string]bodyBase {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	q := strconv.Quote
	admin := bodyBase{fields: []field{{"reason", `"x"`}}}
	return map[string]bodyBase{
		"register_app": {valid: true, fields: []field{{"name", `"Input Test"`}, {"platform", `"mac"`}, {"bundle_id", `"com.example.input"`},
			{"domain", `"example.com"`}, {"download_url", `"https://example.com/input.zip"`}, {"contact_email", `"dev@example.com"`}, {"category", `"games"`}}},
		"top_up":                   {valid: true, fields: []field{{"amount_cents", "5000"}}},
		"create_campaign":          {valid: true, fields: []field{{"app_id", q(e.app)}, {"categories", `["games"]`}, {"daily_budget_cents", "1000"}, {"max_bid_cents", "1000000"}}},
		"update_campaign":          {valid: true, fields: []field{{"categories", `["games"]`}, {"daily_budget_cents", "1000"}, {"max_bid_cents", "1000000"}}},
		"admin_adjust_wallet":      {valid: true, fields: []field{{"amount_cents", "1"}, {"note", `"x"`}}},
		"admin_set_payout_account": {valid: true, fields: []field{{"account_id", `"acct_1"`}}},
		"cut_category_floor":       {valid: true, fields: []field{{"platform", `"mac"`}, {"floor_cents", "1"}, {"reason", `"x"`}}},
		"register_sdk_key":         {valid: true, fields: []field{{"public_key", q(base64.RawURLEncoding.EncodeToString(pub))}}},
		"advance_clock":            {valid: true, fields: []field{{"seconds", "1"}}},
		"create_webhook_endpoint":  {valid: true, fields: []field{{"url", `"https://example.com/hooks"`}, {"events", `["chain.cleared"]`}, {"description", `"x"`}}},
		"update_webhook_endpoint":  {fields: []field{{"url", `"https://example.com/hooks"`}, {"events", `["chain.cleared"]`}, {"description", `"x"`}, {"status", `"enabled"`}}},
		"redeliver_webhook":        {fields: []field{{"event_id", `"evt_none"`}}},
		"admin_approve_app":        admin, "admin_reject_app": admin, "admin_suspend_app": admin,
		"admin_reinstate_app": admin, "admin_review_app": admin,
		"sdk_fill":      {fields: []field{{"app_id", q(e.app)}, {"slot", `"about_window"`}, {"platform", `"mac"`}, {"device_id", `"d"`}, {"locale", `"en-US"`}}},
		"sdk_click":     {fields: []field{{"token", `"t"`}}},
		"sdk_install":   {fields: []field{{"token", `"t"`}, {"countersignature", `"c"`}}},
		"sdk_heartbeat": {fields: []field{{"heartbeat", `"h"`}}},
		// The input app is pending and has traded with nobody: it may
		// choose its earn mode, not complain (complaint_not_allowed).
		"set_earn_mode":           {valid: true, fields: []field{{"earn_mode", `"credits"`}}},
		"update_app":              {valid: true, fields: []field{{"appcast_url", `"https://example.com/appcast.xml"`}}},
		"create_complaint":        {fields: []field{{"app_id", q(e.app)}, {"reason", `"fraud"`}, {"detail", `"x"`}}},
		"admin_resolve_complaint": {fields: []field{{"resolution", `"upheld"`}, {"note", `"x"`}}},
		// No challenge was sent: a well-formed code answers a 409.
		"verify_contact_code": {fields: []field{{"code", `"123456"`}}},
	}
}

// with returns the body with name's value replaced by raw (added when the
// base lacks it), or, dup, sent twice: the base value, then raw.
func (b bodyBase) with(name, raw string, dup bool) string {
	var parts []string
	found := false
	for _, f := range b.fields {
		v := f.raw
		if f.name == name {
			found = true
			if dup {
				parts = append(parts, q(f.name)+":"+v)
			}
			v = raw
		}
		parts = append(parts, q(f.name)+":"+v)
	}
	if !found {
		if dup {
			parts = append(parts, q(name)+":"+raw)
		}
		parts = append(parts, q(name)+":"+raw)
	}
	return "{" + strings.Join(parts, ",") + "}"
}

func q(s string) string { return strconv.Quote(s) }

// ruleCode is the code the document gives a field (x-error-code), or
// fallback.
func ruleCode(s *openapi.Schema, kind, fallback string) string {
	for _, r := range s.Rules(kind) {
		if r.ErrorCode != "" {
			return r.ErrorCode
		}
	}
	return fallback
}

func bound(s *openapi.Schema, kind string, get func(*openapi.Schema) *int) (int, bool) {
	for _, r := range s.Rules(kind) {
		if v := get(r); v != nil {
			return *v, true
		}
	}
	return 0, false
}

// Every field of every body: bad encoding, hidden characters, a duplicate,
// and each bound the document declares, broken.
func TestInputPolicyBodies(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newInputEnv(t, s)
		bases := e.bases(t)
		var probes []probe
		for _, op := range operations(t) {
			if op.Body == nil {
				continue
			}
			base, ok := bases[op.ID]
			require.True(t, ok, "%s: the test has no base body", op.ID)
			path := e.target(op, "", "")
			if base.valid {
				res := e.try(probe{method: op.Method, path: path, auth: e.credentials(op), body: baseBody(base)})
				require.Less(t, res.status, 300, "%s: the base body must be accepted: %s", op.ID, res.body)
			}
			add := func(name, body string, status int, code string) {
				p := probe{name: op.ID + " " + name, method: op.Method, path: path, auth: e.credentials(op), body: body, status: status, code: code}
				probes = append(probes, p)
				if p.auth != "" { // refused by authentication first
					p.name += " (no credentials)"
					p.auth, p.status, p.code = "", 401, apperr.Unauthorized
					probes = append(probes, p)
				}
			}
			add("nested duplicate", base.with("extra", `{"a":1,"a":2}`, false), 400, apperr.DuplicateField)
			add("raw invalid UTF-8", base.with("extra", "\"\xff\"", false), 400, apperr.InvalidEncoding)

			var props []string
			for _, r := range op.Body.Rules("object") {
				for name := range r.Properties {
					props = append(props, name)
				}
			}
			slices.Sort(props)
			require.NotEmpty(t, props, op.ID)
			for _, name := range props {
				var prop *openapi.Schema
				for _, r := range op.Body.Rules("object") {
					if p := r.Properties[name]; p != nil {
						prop = p
					}
				}
				add(name+" twice", base.with(name, baseValue(base, name, prop), true), 400, apperr.DuplicateField)

				str, wrap := prop, func(raw string) string { return raw }
				if prop.Matches("array") && !prop.Matches("string") {
					var items *openapi.Schema
					for _, r := range prop.Rules("array") {
						if r.Items != nil {
							items = r.Items
						}
					}
					require.NotNil(t, items, "%s.%s", op.ID, name)
					str, wrap = items, func(raw string) string { return "[" + raw + "]" }
					max, ok := bound(prop, "array", func(s *openapi.Schema) *int { return s.MaxItems })
					require.True(t, ok, "%s.%s: an array without maxItems", op.ID, name)
					add(name+" over maxItems", base.with(name, "["+strings.TrimSuffix(strings.Repeat(`"a",`, max+1), ",")+"]", false), 422, apperr.TooLong)
				}
				switch {
				case str.Matches("string") && !str.Matches("object"):
					own := func(fallback string) string { return ruleCode(str, "string", fallback) }
					for _, c := range []struct {
						what, raw, code string
						status          int
					}{
						{"NUL", `"a\u0000b"`, apperr.InvalidEncoding, 400},
						{"lone high surrogate", `"a\ud800b"`, apperr.InvalidEncoding, 400},
						{"lone low surrogate", `"\udc00"`, apperr.InvalidEncoding, 400},
						{"invalid UTF-8", "\"a\xc3\x28\"", apperr.InvalidEncoding, 400},
						{"right-to-left override", `"a\u202eb"`, own(apperr.InvalidCharacters), 422},
						{"isolate", `"a\u2066b\u2069"`, own(apperr.InvalidCharacters), 422},
						{"control character", `"a\u0007b"`, own(apperr.InvalidCharacters), 422},
						{"newline", `"a\nb"`, own(apperr.InvalidCharacters), 422},
					} {
						add(name+" "+c.what, base.with(name, wrap(c.raw), false), c.status, c.code)
					}
					if max, ok := bound(str, "string", func(s *openapi.Schema) *int { return s.MaxLength }); ok {
						add(name+" over maxLength", base.with(name, wrap(q(strings.Repeat("a", max+1))), false), 422, own(apperr.TooLong))
					} else {
						require.True(t, isEnum(str), "%s.%s: a string without maxLength", op.ID, name)
					}
				case str.Matches("integer") && !str.Matches("string"):
					min, hasMin := floatBound(str, func(s *openapi.Schema) *float64 { return s.Minimum })
					max, hasMax := floatBound(str, func(s *openapi.Schema) *float64 { return s.Maximum })
					require.True(t, hasMin && hasMax, "%s.%s: an integer without bounds", op.ID, name)
					if !base.valid {
						// Any answer to an invalid base is a 4xx: the bound would
						// not be shown. Give the operation a valid base.
						t.Logf("%s.%s: no valid base body; its integer bounds are not tried", op.ID, name)
						continue
					}
					for _, v := range []int64{int64(min) - 1, int64(max) + 1} {
						// Integer bounds are the domain's, each with its own code:
						// any 4xx proves the bound holds.
						add(fmt.Sprintf("%s=%d", name, v), base.with(name, strconv.FormatInt(v, 10), false), 0, "")
					}
				}
			}
		}
		require.Greater(t, len(probes), 400)
		t.Logf("%d probes of body fields", len(probes))
		for _, p := range probes {
			if p.status != 0 {
				continue
			}
			res := e.try(p)
			assert.True(t, res.status >= 400 && res.status < 500, "%s: answered %d: %.300s", p.name, res.status, res.body)
		}
		var coded []probe
		for _, p := range probes {
			if p.status != 0 {
				coded = append(coded, p)
			}
		}
		e.check(coded)
	})
}

// isEnum reports whether s lists its values: their check is the domain's
// (invalid_platform, invalid_slot), and an enum needs no maxLength.
func isEnum(s *openapi.Schema) bool {
	for _, r := range s.Rules("string") {
		if len(r.Enum) > 0 {
			return true
		}
	}
	return false
}

func floatBound(s *openapi.Schema, get func(*openapi.Schema) *float64) (float64, bool) {
	for _, r := range s.Rules("integer") {
		if v := get(r); v != nil {
			return *v, true
		}
	}
	return 0, false
}

func baseBody(b bodyBase) string {
	parts := make([]string, len(b.fields))
	for i, f := range b.fields {
		parts[i] = q(f.name) + ":" + f.raw
	}
	return "{" + strings.Join(parts, ",") + "}"
}

// baseValue is the base body's value of name, or a value of its type.
func baseValue(b bodyBase, name string, s *openapi.Schema) string {
	for _, f := range b.fields {
		if f.name == name {
			return f.raw
		}
	}
	switch {
	case s.Matches("array") && !s.Matches("string"):
		return `[]`
	case s.Matches("integer") && !s.Matches("string"):
		return "1"
	}
	return `"x"`
}

// The issue's cases, by name, and the values the policy lets through.
func TestInputPolicyIssueCases(t *testing.T) {
	storagetest.Each(t, func(t *testing.T, s storage.Store) {
		e := newInputEnv(t, s)
		register := func(name, category string) string {
			b := fmt.Sprintf(`{"name":%s,"platform":"mac","bundle_id":"com.example.cases","domain":"example.com","download_url":"https://example.com/c.zip","contact_email":"dev@example.com"%s}`, name, category)
			return b
		}
		adjust := "/v1/admin/apps/" + e.app + "/adjustments"
		campaign := func(categories string) string {
			return fmt.Sprintf(`{"app_id":%q,"categories":%s,"daily_budget_cents":1000}`, e.app, categories)
		}
		megabyte := strings.Repeat(`x\u0000`, 1_000_000/8)
		e.check([]probe{
			{name: "last key wins no more", method: "POST", path: "/v1/apps/" + e.app + "/top-up", auth: e.key, body: `{"amount_cents":-1,"amount_cents":5000}`, status: 400, code: apperr.DuplicateField},
			{name: "adjustment note NUL", method: "POST", path: adjust, auth: adminToken, body: `{"amount_cents":100,"note":"a\u0000b"}`, status: 400, code: apperr.InvalidEncoding},
			{name: "adjustment note override", method: "POST", path: adjust, auth: adminToken, body: `{"amount_cents":100,"note":"refund \u202egnp.exe"}`, status: 422, code: apperr.InvalidNote},
			{name: "install countersignature NUL", method: "POST", path: "/v1/sdk/install", body: `{"token":"t","countersignature":"c\u0000"}`, status: 400, code: apperr.InvalidEncoding},
			{name: "fill app_id NUL", method: "POST", path: "/v1/sdk/fill", body: `{"app_id":"a\u0000b","slot":"about_window","platform":"mac"}`, status: 400, code: apperr.InvalidEncoding},
			{name: "fill device_id of 1 MB with NULs", method: "POST", path: "/v1/sdk/fill", body: `{"app_id":"` + e.app + `","slot":"about_window","platform":"mac","device_id":"` + megabyte + `"}`, status: 400, code: apperr.InvalidEncoding},
			{name: "fill device_id of 1 MB", method: "POST", path: "/v1/sdk/fill", body: `{"app_id":"` + e.app + `","slot":"about_window","platform":"mac","device_id":"` + strings.Repeat("d", 1_000_000) + `"}`, status: 422, code: apperr.InvalidDeviceID},
			{name: "fill locale of 1 MB", method: "POST", path: "/v1/sdk/fill", body: `{"app_id":"` + e.app + `","slot":"about_window","platform":"mac","locale":"` + strings.Repeat("l", 1_000_000) + `"}`, status: 422, code: apperr.InvalidLocale},
			{name: "name right-to-left override", method: "POST", path: "/v1/apps", body: register(`"Snip\u202egnp.exe"`, ""), status: 422, code: apperr.InvalidName},
			{name: "name lone surrogate", method: "POST", path: "/v1/apps", body: register(`"Snip\ud800"`, ""), status: 400, code: apperr.InvalidEncoding},
			{name: "name control character", method: "POST", path: "/v1/apps", body: register(`"Snip\u001b[31m"`, ""), status: 422, code: apperr.InvalidName},
			{name: "empty category", method: "POST", path: "/v1/apps", body: register(`"Snip"`, `,"category":""`), status: 422, code: apperr.InvalidCategory},
			{name: "blank category", method: "POST", path: "/v1/apps", body: register(`"Snip"`, `,"category":" "`), status: 422, code: apperr.InvalidCategory},
			{name: "empty campaign category", method: "POST", path: "/v1/campaigns", auth: e.key, body: campaign(`["games",""]`), status: 422, code: apperr.InvalidCategory},
			{name: "malformed campaign category", method: "POST", path: "/v1/campaigns", auth: e.key, body: campaign(`["-games"]`), status: 422, code: apperr.InvalidCategory},
			{name: "body on pause", method: "POST", path: "/v1/campaigns/" + e.campaign + "/pause", auth: e.key, body: `{"status":"active"}`, status: 400, code: apperr.BodyNotAllowed},
			{name: "body on sweep", method: "POST", path: "/v1/admin/attribution/sweep", auth: adminToken, size: 10 << 20, status: 400, code: apperr.BodyNotAllowed},
			{name: "body on test checkout", method: "POST", path: "/test/checkout/" + e.session, body: `{}`, status: 400, code: apperr.BodyNotAllowed},
			{name: "Prefer too long", method: "POST", path: "/v1/apps/" + e.app + "/top-up", auth: e.key, body: `{"amount_cents":5000}`, header: map[string]string{"Prefer": strings.Repeat("p", 1025)}, status: 422, code: apperr.TooLong},
			{name: "X-PAYMENT too long", method: "POST", path: "/v1/apps/" + e.app + "/top-up", auth: e.key, body: `{"amount_cents":5000}`, header: map[string]string{"X-PAYMENT": strings.Repeat("p", 16385)}, status: 400, code: apperr.InvalidPaymentHeader},
			{name: "Idempotency-Key too long", method: "POST", path: "/v1/apps", body: register(`"Snip"`, ""), header: map[string]string{"Idempotency-Key": strings.Repeat("k", 256)}, status: 400, code: apperr.InvalidIdempotencyKey},
		})

		// Headers the server reads, not UTF-8: on a public, a protected and
		// an admin operation.
		var probes []probe
		for _, h := range []string{"Idempotency-Key", "Authorization", "X-Request-Id", "Prefer", "X-PAYMENT", "Accept", "X-Forwarded-For"} {
			for _, target := range []struct{ method, path, auth, body string }{
				{"POST", "/v1/apps", "", register(`"Snip"`, "")},
				{"POST", "/v1/apps/" + e.app + "/top-up", e.key, `{"amount_cents":5000}`},
				{"GET", "/v1/admin/clock", adminToken, ""},
			} {
				p := probe{name: h + " not UTF-8", method: target.method, path: target.path, auth: target.auth, body: target.body,
					header: map[string]string{h: "v\xff\xfe"}, status: 400, code: apperr.InvalidEncoding}
				if h == "Authorization" {
					p.auth = ""
				}
				probes = append(probes, p)
			}
		}
		e.check(probes)

		// NUL in a header: net/http refuses it on the wire (400 before any
		// handler), and the policy refuses it from an in-process caller.
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		require.NoError(t, err)
		defer conn.Close()
		_, err = conn.Write([]byte("GET /v1/rate-card HTTP/1.1\r\nHost: x\r\nX-Request-Id: a\x00b\r\n\r\n"))
		require.NoError(t, err)
		status, err := bufio.NewReader(conn).ReadString('\n')
		require.NoError(t, err)
		assert.True(t, strings.HasPrefix(status, "HTTP/1.1 400 "), status)
		for _, h := range []string{"Idempotency-Key", "Authorization", "X-Request-Id", "Prefer", "X-Payment"} {
			req := httptest.NewRequest("POST", "/v1/apps/"+e.app+"/top-up", strings.NewReader(`{"amount_cents":5000}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.key)
			req.Header[h] = []string{"a\x00b"}
			rec := httptest.NewRecorder()
			e.srv.ServeHTTP(rec, req)
			assert.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", h, rec.Body)
			assert.Contains(t, rec.Body.String(), `"code":"invalid_encoding"`, h)
		}

		// What the policy lets through: characters outside the BMP, sent
		// as a surrogate pair or as UTF-8, joiners, accents, a category.
		for _, name := range []string{`"Snip \ud83d\ude00"`, `"Snip 😀"`, `"Snip 👩\u200d💻"`, `"Café Ünïcödé"`} {
			res := e.try(probe{method: "POST", path: "/v1/apps", body: register(name, `,"category":"games"`)})
			assert.Equal(t, http.StatusCreated, res.status, "%s: %s", name, res.body)
		}
		res := e.try(probe{method: "POST", path: adjust, auth: adminToken, body: `{"amount_cents":100,"note":"goodwill credit, ticket #42 — merci"}`})
		assert.Equal(t, http.StatusCreated, res.status, res.body)
	})
}
