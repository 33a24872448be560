package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/xpromo/xpromo/server/gate"
	"github.com/xpromo/xpromo/server/gate/rdap"
)

// rdapBase is the address the sandbox's RDAP server answers at. It is never
// dialled: requests reach the handler through an in-memory transport.
const rdapBase = "https://rdap.sandbox.invalid/"

// Domains answers the domain-age check for reserved names with a real rdap
// client asking the sandbox's RDAP server (RFC 9083 domain objects over
// HTTP, in memory); other names go to next. The registration date depends on
// the first label of the registrable domain the client asks about:
// "young" → 30 days before now (gate_domain_too_young), "unknown" → 404
// (gate_domain_unknown), anything else → 2000-01-01.
func (s *Sandbox) Domains(next gate.DomainChecker) gate.DomainChecker {
	c, err := rdap.New(rdap.Config{
		BaseURL: rdapBase,
		// Not server/outbound: this transport hands the request to the
		// in-memory RDAP handler and never opens a socket, so there is no
		// address to guard. Non-reserved names never reach it (next does).
		HTTP: &http.Client{Transport: handlerTransport{rdapServer{now: s.now}}, Timeout: 10 * time.Second},
		Now:  s.now,
	})
	if err != nil {
		panic(err) // rdapBase is a constant absolute URL
	}
	return &domains{sandbox: c, next: next}
}

type domains struct {
	sandbox *rdap.Client
	next    gate.DomainChecker
}

func (d *domains) Check(ctx context.Context, hostOrURL string) rdap.Result {
	if Reserved(hostOrURL) {
		return d.sandbox.Check(ctx, hostOrURL)
	}
	if d.next == nil {
		return rdap.Result{Reason: rdap.ReasonRDAPUnavailable, Err: errNoNext("RDAP client")}
	}
	return d.next.Check(ctx, hostOrURL)
}

type errNoNext string

func (e errNoNext) Error() string {
	return "sandbox: no " + string(e) + " is configured for names that are not reserved"
}

// rdapServer is an RFC 9082/9083 server for reserved domains: GET
// /domain/{name} answers a domain object shaped like a registry's.
type rdapServer struct{ now func() time.Time }

func (h rdapServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/rdap+json")
	name, ok := strings.CutPrefix(r.URL.Path, "/domain/")
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if r.Method != http.MethodGet || !ok || !Reserved(name) || firstLabel(name) == "unknown" {
		w.WriteHeader(http.StatusNotFound)
		json.NewEncoder(w).Encode(map[string]any{
			"rdapConformance": []string{"rdap_level_0"},
			"errorCode":       404,
			"title":           "Not Found",
			"description":     []string{"xpromo sandbox: no such domain"},
		})
		return
	}
	registered := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if firstLabel(name) == "young" {
		registered = h.now().UTC().AddDate(0, 0, -30).Truncate(time.Second)
	}
	json.NewEncoder(w).Encode(map[string]any{
		"rdapConformance": []string{"rdap_level_0"},
		"objectClassName": "domain",
		"handle":          "SANDBOX-" + strings.ToUpper(strings.ReplaceAll(name, ".", "-")),
		"ldhName":         name,
		"status":          []string{"active"},
		"events": []map[string]string{
			{"eventAction": "registration", "eventDate": registered.Format(time.RFC3339)},
			{"eventAction": "last changed", "eventDate": registered.Format(time.RFC3339)},
		},
		"notices": []map[string]any{{
			"title":       "xpromo sandbox",
			"description": []string{"Answered by the xpromo gate's test mode for a reserved (RFC 2606) name."},
		}},
	})
}

// handlerTransport serves requests with an http.Handler in memory.
type handlerTransport struct{ h http.Handler }

func (t handlerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := r.Context().Err(); err != nil {
		return nil, err
	}
	w := &response{header: http.Header{}}
	t.h.ServeHTTP(w, r)
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return &http.Response{
		Status: strconv.Itoa(w.status) + " " + http.StatusText(w.status), StatusCode: w.status,
		Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: w.header, Body: io.NopCloser(&w.body), ContentLength: int64(w.body.Len()),
		Request: r,
	}, nil
}

// response is the http.ResponseWriter of handlerTransport.
type response struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *response) Header() http.Header { return w.header }

func (w *response) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *response) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
