package cli

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/webhook"
	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Listening: `xpromo listen` follows the app's events through the events
// API's long poll and forwards each to a URL on the developer's machine,
// signed as the server signs deliveries, the way `stripe listen` does. No
// endpoint is registered and nothing needs a public URL.

const (
	// listenWait is the long poll of each request (the API allows 30 s).
	listenWait = 25 * time.Second
	// listenOverlap is how far back each poll reads again: on PostgreSQL an
	// event can commit slightly after one stamped later, so a cursor that
	// moved past its timestamp would never show it. Ids already seen are
	// skipped.
	listenOverlap = 10 * time.Second
	// forwardTimeout bounds each POST to the local URL.
	forwardTimeout = 10 * time.Second
	// forwardExcerpt is how much of a failed answer is shown.
	forwardExcerpt = 200
)

func (r *runner) listenCommand() *cobra.Command {
	var forwardTo, secret, since string
	var events []string
	cmd := &cobra.Command{
		Use:   "listen [--forward-to URL] [--events TYPE,...] [--secret whsec_…] [--since RFC3339]",
		Short: "stream the app's events as they happen, forwarding each to a local URL, signed",
		Long: `Follows the app's events (GET /v1/apps/{app_id}/events with a long poll) from
now, or from --since, and prints one line per event. With --forward-to, each
event is POSTed to that URL the way the server delivers webhooks: the event as
the body, with Standard Webhooks headers signed with --secret, or with a fresh
whsec_ secret printed at start. The local answer's status is shown on the
event's line; a failed forward is not retried ("xpromo events list" shows
everything again).

Use it to develop a receiver on your machine: no endpoint is registered and no
public URL is needed (the POST goes from this command to the URL, typically
http://localhost:…). Verify in the receiver with sdk/webhook and the secret.

Events of the same instant may arrive in any order; each is forwarded once
(every poll reads the last 10 seconds again and skips the ids already seen, so
an event that committed late is not missed). --json prints each event as the
API sends it, one per line, and the forward results on stderr. Ctrl-C stops.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			types, err := eventTypes(events)
			if err != nil {
				return err
			}
			l := &listener{r: r, types: types, since: time.Now().UTC()}
			if since != "" {
				if l.since, err = parseTime("--since", since); err != nil {
					return err
				}
			}
			if forwardTo != "" {
				u, err := url.Parse(forwardTo)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					return usageErr("--forward-to must be an absolute http(s) URL, like http://localhost:4242/webhooks, not %q", forwardTo)
				}
				l.forwardTo = u.String()
				if secret == "" {
					if secret, err = newSecret(); err != nil {
						return err
					}
				}
				// Sign once to check the secret before listening.
				if _, err := webhook.Sign(secret, "evt_check", time.Now(), nil); err != nil {
					return usageErr("--secret: %v", err)
				}
				l.secret = secret
				// The developer's own machine: a plain client, not the API's
				// transport (and no SSRF guard: localhost is the point).
				l.http = &http.Client{Timeout: forwardTimeout}
			} else if secret != "" {
				return usageErr("--secret signs what --forward-to sends: give --forward-to too")
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			l.c, l.appID = c, appID
			return l.run(cmd.Context())
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&forwardTo, "forward-to", "", "POST each event to this URL (e.g. http://localhost:4242/webhooks)")
	f.StringSliceVar(&events, "events", nil, "only these event types, comma-separated (default: all)")
	f.StringVar(&secret, "secret", "", "whsec_… secret to sign forwarded events with (default: a fresh one, printed at start)")
	f.StringVar(&since, "since", "", "start from this time (RFC 3339) instead of now")
	return cmd
}

// newSecret is a fresh signing secret, as the server makes them.
func newSecret() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return webhook.SecretPrefix + base64.StdEncoding.EncodeToString(b[:]), nil
}

// listener is one run of `xpromo listen`.
type listener struct {
	r         *runner
	c         *xpromo.Client
	appID     string
	types     []xpromo.EventType
	since     time.Time
	forwardTo string
	secret    string
	http      *http.Client

	seen   map[string]time.Time // ids handled, with their created_at
	newest time.Time            // the newest created_at handled
}

func (l *listener) run(ctx context.Context) error {
	l.seen = map[string]time.Time{}
	l.newest = l.since
	stderr := l.r.env.Stderr
	if l.forwardTo != "" {
		fmt.Fprintf(stderr, "Ready! Your webhook signing secret is %s (^C to quit)\n", l.secret)
		fmt.Fprintf(stderr, "Forwarding the events of %s to %s\n", l.appID, l.forwardTo)
	} else {
		fmt.Fprintf(stderr, "Ready! Listening to the events of %s (^C to quit)\n", l.appID)
	}
	cursor := ""
	for {
		// New events: a long poll after the cursor (from the start time on
		// the first request).
		p := xpromo.EventParams{Types: l.types, Cursor: cursor, Wait: listenWait}
		if cursor == "" {
			p.Since = l.since
		}
		page, err := l.c.ListEvents(ctx, l.appID, &p)
		if err != nil {
			return l.stopped(ctx, err)
		}
		if err := l.handle(ctx, page.Events); err != nil {
			return l.stopped(ctx, err)
		}
		cursor = page.NextCursor
		if page.HasMore {
			continue // read the rest before waiting again
		}
		// Late commits: the last moments again, skipping what was seen.
		if err := l.overlap(ctx); err != nil {
			return l.stopped(ctx, err)
		}
	}
}

// overlap reads the events of the last listenOverlap before the newest one
// handled and handles those not seen yet.
func (l *listener) overlap(ctx context.Context) error {
	from := l.newest.Add(-listenOverlap)
	if from.Before(l.since) {
		from = l.since
	}
	for ev, err := range l.c.Events(ctx, l.appID, &xpromo.EventParams{Types: l.types, Since: from}) {
		if err != nil {
			return err
		}
		if err := l.handle(ctx, []xpromo.Event{ev}); err != nil {
			return err
		}
	}
	// Forget what no overlap reads any more.
	for id, at := range l.seen {
		if at.Before(from.Add(-listenOverlap)) {
			delete(l.seen, id)
		}
	}
	return nil
}

// handle prints and forwards each event not seen yet.
func (l *listener) handle(ctx context.Context, evs []xpromo.Event) error {
	for _, ev := range evs {
		if _, dup := l.seen[ev.ID]; dup {
			continue
		}
		l.seen[ev.ID] = ev.CreatedAt
		if ev.CreatedAt.After(l.newest) {
			l.newest = ev.CreatedAt
		}
		body, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		result := ""
		if l.forwardTo != "" {
			var answered bool
			result, answered = l.forward(ctx, ev.ID, body)
			if err := ctx.Err(); err != nil && !answered {
				return err // interrupted mid-forward: stop without a line
			}
		}
		if l.r.g.json {
			if _, err := l.r.env.Stdout.Write(append(body, '\n')); err != nil {
				return err
			}
			if result != "" {
				fmt.Fprintf(l.r.env.Stderr, "%s %s\n", ev.ID, result)
			}
			continue
		}
		line := fmt.Sprintf("%s  %-19s  %s  %s", ts(ev.CreatedAt), ev.Type, ev.ID, eventSummary(ev))
		if result != "" {
			line += "  " + result
		}
		if _, err := fmt.Fprintln(l.r.env.Stdout, cell(line)); err != nil {
			return err
		}
	}
	return nil
}

// forward POSTs one event to the local URL, signed, and describes the
// outcome: "→ [200] POST http://…", or "→ [ERR] …" when no answer came
// (answered false).
func (l *listener) forward(ctx context.Context, id string, body []byte) (result string, answered bool) {
	now := time.Now()
	sig, err := webhook.Sign(l.secret, id, now, body)
	if err != nil {
		return "→ [ERR] signing: " + err.Error(), false
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.forwardTo, bytes.NewReader(body))
	if err != nil {
		return "→ [ERR] " + err.Error(), false
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "xpromo-cli/"+Version+" (listen)")
	req.Header.Set(webhook.HeaderID, id)
	req.Header.Set(webhook.HeaderTimestamp, fmt.Sprint(now.Unix()))
	req.Header.Set(webhook.HeaderSignature, sig)
	resp, err := l.http.Do(req)
	if err != nil {
		return "→ [ERR] POST " + l.forwardTo + ": " + oneLine(err.Error()), false
	}
	defer resp.Body.Close()
	excerpt, _ := io.ReadAll(io.LimitReader(resp.Body, forwardExcerpt))
	out := fmt.Sprintf("→ [%d] POST %s", resp.StatusCode, l.forwardTo)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if s := oneLine(string(bytes.ToValidUTF8(excerpt, nil))); s != "" {
			out += ": " + s
		}
	}
	return out, true
}

// stopped ends the run: Ctrl-C (the context ended) is the normal way out,
// anything else is the error.
func (l *listener) stopped(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, ctx.Err())) {
		fmt.Fprintln(l.r.env.Stderr, "Stopped.")
		return nil
	}
	return err
}
