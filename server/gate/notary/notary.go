// Package notary asks Apple's public notarisation ticket service whether a
// ticket exists for a signed artefact: the CloudKit records lookup that
// stapler and Gatekeeper use (no credentials), by record name
// "2/<digest type>/<first 20 bytes of the digest, hex>". The digest is an
// app's main-executable CodeDirectory hash (its cdhash) or a flat .pkg's
// TOC checksum. Requests go through the caller's HTTP client (the gate's:
// server/outbound); the base URL is configurable, and test mode's sandbox
// answers the same JSON.
package notary

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// DefaultURL is Apple's ticket lookup endpoint.
const DefaultURL = "https://api.apple-cloudkit.com/database/1/com.apple.gk.ticket-delivery/production/public/records/lookup"

// MaxAnswerBytes bounds an answer: one record with a ticket of a few KiB.
const MaxAnswerBytes = 256 << 10

// Digest types in record names (Apple's CodeDirectory hash types).
const (
	DigestSHA1   = 1
	DigestSHA256 = 2
	DigestSHA384 = 4
)

// RecordName is the lookup key of an artefact whose digest (of the given
// type) is d: only its first 20 bytes count, as stapler truncates it.
func RecordName(digestType int, d []byte) string {
	return fmt.Sprintf("2/%d/%s", digestType, hex.EncodeToString(d[:min(20, len(d))]))
}

// DigestType maps a crypto.Hash's name ("SHA-1", "SHA-256", "SHA-384")
// to the record name's digest type, 0 when it has none.
func DigestType(name string) int {
	switch name {
	case "SHA-1":
		return DigestSHA1
	case "SHA-256":
		return DigestSHA256
	case "SHA-384":
		return DigestSHA384
	}
	return 0
}

// Answer is what the service says about one record.
type Answer struct {
	Found  bool
	Ticket []byte // the signed ticket when found
	// Reason is the service's explanation of a miss ("Record not found").
	Reason string
}

// ErrUnavailable wraps every failure to get an answer (the network, a
// non-200 status, an answer that does not parse): the caller falls back to
// the stapled ticket.
var ErrUnavailable = errors.New("notary: the ticket service did not answer")

// Client looks records up.
type Client struct {
	URL  string       // the lookup endpoint; "" means DefaultURL
	HTTP *http.Client // required: server/outbound's client in the server
}

// Lookup asks for one record.
func (c *Client) Lookup(ctx context.Context, recordName string) (Answer, error) {
	u := c.URL
	if u == "" {
		u = DefaultURL
	}
	body, _ := json.Marshal(map[string]any{"records": []map[string]string{{"recordName": recordName}}})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return Answer{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswerBytes+1))
	switch {
	case err != nil:
		return Answer{}, fmt.Errorf("%w: reading the answer: %w", ErrUnavailable, err)
	case len(raw) > MaxAnswerBytes:
		return Answer{}, fmt.Errorf("%w: the answer is larger than %d bytes", ErrUnavailable, MaxAnswerBytes)
	case resp.StatusCode != http.StatusOK:
		return Answer{}, fmt.Errorf("%w: it answered %d", ErrUnavailable, resp.StatusCode)
	}
	return ParseAnswer(raw, recordName)
}

// ParseAnswer reads a lookup answer (at most MaxAnswerBytes) for
// recordName: a record of type DeveloperIDTicket with a signedTicket
// field of type BYTES (base64) is found; a record with serverErrorCode
// NOT_FOUND is a miss; anything else is ErrUnavailable.
func ParseAnswer(raw []byte, recordName string) (Answer, error) {
	if len(raw) > MaxAnswerBytes {
		return Answer{}, fmt.Errorf("%w: the answer is larger than %d bytes", ErrUnavailable, MaxAnswerBytes)
	}
	var doc struct {
		Records []struct {
			RecordName      string `json:"recordName"`
			RecordType      string `json:"recordType"`
			Reason          string `json:"reason"`
			ServerErrorCode string `json:"serverErrorCode"`
			Deleted         bool   `json:"deleted"`
			Fields          struct {
				SignedTicket struct {
					Type  string `json:"type"`
					Value string `json:"value"`
				} `json:"signedTicket"`
			} `json:"fields"`
		} `json:"records"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return Answer{}, fmt.Errorf("%w: the answer is not JSON: %w", ErrUnavailable, err)
	}
	for _, r := range doc.Records {
		if r.RecordName != recordName {
			continue
		}
		switch {
		case r.ServerErrorCode == "NOT_FOUND":
			return Answer{Reason: firstNonEmpty(r.Reason, "Record not found")}, nil
		case r.ServerErrorCode != "":
			return Answer{}, fmt.Errorf("%w: %s (%s)", ErrUnavailable, r.ServerErrorCode, r.Reason)
		case r.Deleted:
			return Answer{Reason: "the record was deleted"}, nil
		case r.RecordType != "DeveloperIDTicket" || r.Fields.SignedTicket.Type != "BYTES":
			return Answer{}, fmt.Errorf("%w: a %q record without a signed ticket", ErrUnavailable, r.RecordType)
		}
		t, err := base64.StdEncoding.DecodeString(strings.TrimSpace(r.Fields.SignedTicket.Value))
		if err != nil || len(t) == 0 {
			return Answer{}, fmt.Errorf("%w: the signed ticket is not base64", ErrUnavailable)
		}
		return Answer{Found: true, Ticket: t}, nil
	}
	return Answer{}, fmt.Errorf("%w: no record %s in the answer", ErrUnavailable, recordName)
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
