package notary

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/xpromo/xpromo/server/outbound"
)

func TestLookup(t *testing.T) {
	name := RecordName(DigestSHA256, []byte("0123456789abcdefghijklmnopqrstuvwxyz"))
	if name != "2/2/303132333435363738396162636465666768696a" {
		t.Fatalf("record name %s", name)
	}
	srv := httptest.NewServer(Handler(func(r string) bool { return r == name }, []byte("s8ChAAAA ticket")))
	defer srv.Close()
	c := &Client{URL: srv.URL + "/database/1/com.apple.gk.ticket-delivery/production/public/records/lookup",
		HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true})}
	a, err := c.Lookup(context.Background(), name)
	if err != nil || !a.Found || string(a.Ticket) != "s8ChAAAA ticket" {
		t.Fatalf("%+v %v", a, err)
	}
	a, err = c.Lookup(context.Background(), "2/2/00")
	if err != nil || a.Found || a.Reason != "Record not found" {
		t.Fatalf("%+v %v", a, err)
	}
}

func TestLookupUnavailable(t *testing.T) {
	for name, h := range map[string]http.HandlerFunc{
		"500":      func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(500) },
		"not JSON": func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("<html>")) },
		"too large": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"records":[{"reason":"` + strings.Repeat("x", MaxAnswerBytes) + `"}]}`))
		},
		"another record": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"records":[{"recordName":"2/2/ff","serverErrorCode":"NOT_FOUND"}]}`))
		},
		"no ticket": func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"records":[{"recordName":"2/2/00","recordType":"DeveloperIDTicket","fields":{}}]}`))
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(h)
			defer srv.Close()
			c := &Client{URL: srv.URL, HTTP: outbound.New(outbound.Options{TestOnlyAllowLoopback: true})}
			if _, err := c.Lookup(context.Background(), "2/2/00"); !errors.Is(err, ErrUnavailable) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	// The client goes through server/outbound: loopback is refused unless a test allows it.
	srv := httptest.NewServer(Handler(func(string) bool { return true }, []byte("t")))
	defer srv.Close()
	c := &Client{URL: srv.URL, HTTP: outbound.New(outbound.Options{})}
	if _, err := c.Lookup(context.Background(), "2/2/00"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, outbound.ErrForbiddenAddress) {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParseAnswer(f *testing.F) {
	f.Add([]byte(`{"records":[{"recordName":"2/2/00","recordType":"DeveloperIDTicket","fields":{"signedTicket":{"type":"BYTES","value":"czhDaA=="}}}]}`))
	f.Add([]byte(`{"records":[{"recordName":"2/2/00","reason":"Record not found","serverErrorCode":"NOT_FOUND"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := ParseAnswer(b, "2/2/00")
		if err != nil && !errors.Is(err, ErrUnavailable) {
			t.Fatalf("unclassified error %v", err)
		}
		if err == nil && a.Found && len(a.Ticket) == 0 {
			t.Fatal("found without a ticket")
		}
	})
}
