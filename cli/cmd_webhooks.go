package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xpromo/xpromo/sdk/xpromo"
)

// Webhook endpoints and the events API (docs/webhooks.md); `xpromo listen`
// is in cmd_listen.go.

func (r *runner) webhooksCommand() *cobra.Command {
	return group("webhooks", "the app's webhook endpoints: where its events are delivered, signed",
		r.webhooksCreateCommand(), r.webhooksListCommand(), r.webhooksGetCommand(), r.webhooksUpdateCommand(),
		r.webhooksStatusCommand("enable", xpromo.WebhookEndpointEnabled, "deliver to the endpoint again (clears why it was disabled)"),
		r.webhooksStatusCommand("disable", xpromo.WebhookEndpointDisabled, "stop deliveries to the endpoint (its queued deliveries are dropped)"),
		r.webhooksDeleteCommand(), r.webhooksRotateCommand(), r.webhooksAttemptsCommand(), r.webhooksRedeliverCommand())
}

// eventTypes checks a --events list locally (the server refuses unknown
// types too, with invalid_event_type).
func eventTypes(names []string) ([]xpromo.EventType, error) {
	out := make([]xpromo.EventType, 0, len(names))
	for _, n := range names {
		t := xpromo.EventType(strings.TrimSpace(n))
		if !t.Valid() {
			return nil, usageErr("%q is not an event type; the types are %s", n, joinComma(eventTypeNames()))
		}
		out = append(out, t)
	}
	return out, nil
}

func eventTypeNames() []string {
	var names []string
	for _, t := range xpromo.EventTypes {
		names = append(names, string(t))
	}
	return names
}

func (r *runner) webhooksCreateCommand() *cobra.Command {
	var req xpromo.CreateWebhookEndpointRequest
	var events []string
	var idemKey string
	cmd := &cobra.Command{
		Use:   "create --url URL --events TYPE,... [--description TEXT]",
		Short: "register an endpoint (POST /v1/apps/{app_id}/webhook-endpoints); prints its secret once",
		Long: `Registers a URL the app's events are POSTed to, signed with Standard Webhooks
headers. --events lists the types it receives: ` + joinComma(eventTypeNames()) + `.

The URL must be https (http is accepted by a test-mode server) and reach the
public internet. The answer shows the endpoint's signing secret (whsec_…) this
once: give it to your receiver (sdk/webhook.Verify). At most 10 endpoints per
app. To try webhooks on your machine without a public URL, use "xpromo listen".`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := required(cmd, "url", "events"); err != nil {
				return err
			}
			types, err := eventTypes(events)
			if err != nil {
				return err
			}
			req.Events = types
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			e, err := c.CreateWebhookEndpoint(cmd.Context(), appID, &req, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			if err := r.printEndpoint(e); err != nil {
				return err
			}
			fmt.Fprintln(r.env.Stderr, "The secret is shown this once: your receiver verifies each delivery with it.")
			return nil
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&req.URL, "url", "", "the receiver's URL (https)")
	f.StringSliceVar(&events, "events", nil, "event types to receive, comma-separated")
	f.StringVar(&req.Description, "description", "", "a note for people (at most 256 characters)")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) webhooksListCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "list",
		Short: "the app's endpoints (GET /v1/apps/{app_id}/webhook-endpoints)",
		Args:  noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			list, err := c.ListWebhookEndpoints(cmd.Context(), appID)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			if len(list.Endpoints) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no webhook endpoints")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("ID", "STATUS", "URL", "EVENTS", "DESCRIPTION")
			for _, e := range list.Endpoints {
				t.row(e.ID, endpointStatus(&e), e.URL, joinTypes(e.Events), orDash(&e.Description))
			}
			return t.flush()
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) webhooksGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get <endpoint_id>",
		Short: "one endpoint (GET /v1/apps/{app_id}/webhook-endpoints/{endpoint_id})",
		Args:  exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			e, err := c.GetWebhookEndpoint(cmd.Context(), appID, args[0])
			if err != nil {
				return err
			}
			return r.printEndpointOrRaw(e)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) webhooksUpdateCommand() *cobra.Command {
	var url, description string
	var events []string
	cmd := &cobra.Command{
		Use:   "update <endpoint_id> [--url URL] [--events TYPE,...] [--description TEXT]",
		Short: "change an endpoint's URL, event types or description (PATCH …/webhook-endpoints/{endpoint_id})",
		Long:  `Changes the fields given; the others stay as they are. "enable" and "disable" change the status.`,
		Args:  exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			var req xpromo.UpdateWebhookEndpointRequest
			fl := cmd.Flags()
			if !fl.Changed("url") && !fl.Changed("events") && !fl.Changed("description") {
				return usageErr("give at least one of --url, --events and --description")
			}
			if fl.Changed("url") {
				req.URL = &url
			}
			if fl.Changed("description") {
				req.Description = &description
			}
			if fl.Changed("events") {
				types, err := eventTypes(events)
				if err != nil {
					return err
				}
				if len(types) == 0 {
					return usageErr("--events needs at least one event type")
				}
				req.Events = types
			}
			return r.updateEndpoint(cmd, args[0], &req)
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&url, "url", "", "the receiver's new URL")
	f.StringSliceVar(&events, "events", nil, "the event types to receive instead, comma-separated")
	f.StringVar(&description, "description", "", "the new description")
	return cmd
}

func (r *runner) webhooksStatusCommand(name string, status xpromo.WebhookEndpointStatus, short string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   name + " <endpoint_id>",
		Short: short + " (PATCH …/webhook-endpoints/{endpoint_id} status=" + string(status) + ")",
		Args:  exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.updateEndpoint(cmd, args[0], &xpromo.UpdateWebhookEndpointRequest{Status: &status})
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) updateEndpoint(cmd *cobra.Command, id string, req *xpromo.UpdateWebhookEndpointRequest) error {
	c, appID, err := r.appClient()
	if err != nil {
		return err
	}
	e, err := c.UpdateWebhookEndpoint(cmd.Context(), appID, id, req)
	if err != nil {
		return err
	}
	return r.printEndpointOrRaw(e)
}

func (r *runner) webhooksDeleteCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "delete <endpoint_id>",
		Short: "delete an endpoint and its queued deliveries (DELETE …/webhook-endpoints/{endpoint_id})",
		Long:  `Deletes the endpoint. The API answers 204 with no body: with --json nothing is printed.`,
		Args:  exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			if err := c.DeleteWebhookEndpoint(cmd.Context(), appID, args[0]); err != nil {
				return err
			}
			if r.g.json {
				return nil
			}
			_, err = fmt.Fprintf(r.env.Stdout, "deleted %s\n", args[0])
			return err
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

func (r *runner) webhooksRotateCommand() *cobra.Command {
	var idemKey string
	cmd := &cobra.Command{
		Use:   "rotate-secret <endpoint_id>",
		Short: "give an endpoint a new signing secret; the old one signs too for 24 hours",
		Long: `Rotates the endpoint's secret (POST …/webhook-endpoints/{endpoint_id}/rotate-secret)
and prints the new one, this once. Until previous_secret_expires_at every
delivery carries two signatures, the new secret's and the old one's, so your
receiver can switch to the new secret without missing an event.`,
		Args: exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			e, err := c.RotateWebhookSecret(cmd.Context(), appID, args[0], idempotency(idemKey)...)
			if err != nil {
				return err
			}
			return r.printEndpointOrRaw(e)
		},
	}
	r.addAppIDFlag(cmd)
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) webhooksAttemptsCommand() *cobra.Command {
	var p xpromo.WebhookAttemptParams
	cmd := &cobra.Command{
		Use:   "attempts <endpoint_id> [--event-id ID] [--limit N] [--cursor C]",
		Short: "an endpoint's delivery attempts, newest first (GET …/webhook-endpoints/{endpoint_id}/attempts)",
		Long: `One page of the endpoint's delivery attempts, newest first: when each was made,
the receiver's status (or why no answer came), the latency, the start of the
answer and when the next attempt is due. When older attempts exist, the
next_cursor is printed on stderr: pass it as --cursor.`,
		Args: exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			page, err := c.ListWebhookAttempts(cmd.Context(), appID, args[0], &p)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			if len(page.Attempts) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no attempts")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("ATTEMPTED_AT", "EVENT_ID", "ATTEMPT", "RESULT", "LATENCY", "NEXT_ATTEMPT_AT", "RESPONSE")
			for _, a := range page.Attempts {
				next := "-"
				if a.NextAttemptAt != nil {
					next = ts(*a.NextAttemptAt)
				}
				t.row(ts(a.AttemptedAt), a.EventID, strconv.Itoa(a.Attempt), attemptResult(a),
					strconv.FormatInt(a.LatencyMS, 10)+" ms", next, orDash(&a.ResponseExcerpt))
			}
			if err := t.flush(); err != nil {
				return err
			}
			if page.NextCursor != nil && *page.NextCursor != "" {
				fmt.Fprintf(r.env.Stderr, "older attempts: --cursor %s\n", *page.NextCursor)
			}
			return nil
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringVar(&p.EventID, "event-id", "", "only the attempts of this event")
	f.IntVar(&p.Limit, "limit", 0, "attempts per page, 1-100 (default: the server's, 20)")
	f.StringVar(&p.Cursor, "cursor", "", "the next_cursor of the previous page")
	return cmd
}

// attemptResult is an attempt's outcome in a few words.
func attemptResult(a xpromo.WebhookAttempt) string {
	switch {
	case a.StatusCode != nil && a.Succeeded:
		return strconv.Itoa(*a.StatusCode) + " delivered"
	case a.StatusCode != nil:
		return strconv.Itoa(*a.StatusCode) + " failed"
	case a.Error != nil:
		return "failed: " + *a.Error
	}
	return "failed"
}

func (r *runner) webhooksRedeliverCommand() *cobra.Command {
	var eventID, idemKey string
	cmd := &cobra.Command{
		Use:   "redeliver <endpoint_id> --event-id ID",
		Short: "send one event to an endpoint again, now (POST …/webhook-endpoints/{endpoint_id}/redeliver)",
		Long: `Queues the event (of the last 30 days) for the endpoint again, due now, with a
fresh schedule of attempts. A disabled endpoint must be enabled first (409
webhook_endpoint_disabled).`,
		Args: exactArgs("<endpoint_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := required(cmd, "event-id"); err != nil {
				return err
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			d, err := c.Redeliver(cmd.Context(), appID, args[0], eventID, idempotency(idemKey)...)
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"event_id", d.EventID},
				[2]string{"endpoint_id", d.EndpointID},
				[2]string{"next_attempt_at", ts(d.NextAttemptAt)},
				[2]string{"attempts", strconv.Itoa(d.Attempts)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	cmd.Flags().StringVar(&eventID, "event-id", "", "the event to deliver again (evt_…)")
	addIdempotencyFlag(cmd, &idemKey)
	return cmd
}

func (r *runner) printEndpointOrRaw(e *xpromo.WebhookEndpoint) error {
	if r.g.json {
		return r.writeRaw()
	}
	return r.printEndpoint(e)
}

func (r *runner) printEndpoint(e *xpromo.WebhookEndpoint) error {
	rows := [][2]string{
		{"id", e.ID},
		{"url", e.URL},
		{"events", joinTypes(e.Events)},
		{"description", orDash(&e.Description)},
		{"status", endpointStatus(e)},
		{"created_at", ts(e.CreatedAt)},
		{"updated_at", ts(e.UpdatedAt)},
	}
	if e.PreviousSecretExpiresAt != nil {
		rows = append(rows, [2]string{"previous_secret_expires_at", ts(*e.PreviousSecretExpiresAt) + " (the previous secret signs too until then)"})
	}
	if e.Secret != "" {
		rows = append(rows, [2]string{"secret", e.Secret})
	}
	return kv(r.env.Stdout, rows...)
}

// endpointStatus is the status, with why and since when it is disabled.
func endpointStatus(e *xpromo.WebhookEndpoint) string {
	if e.Status != xpromo.WebhookEndpointDisabled || e.DisabledReason == nil {
		return string(e.Status)
	}
	why := map[xpromo.WebhookDisabledReason]string{
		xpromo.WebhookDisabledByRequest: "by request",
		xpromo.WebhookDisabledGone:      "the receiver answered 410 Gone",
		xpromo.WebhookDisabledFailing:   "every attempt of an event failed",
	}[*e.DisabledReason]
	if why == "" {
		why = string(*e.DisabledReason)
	}
	s := string(e.Status) + " (" + why
	if e.DisabledAt != nil {
		s += ", since " + ts(*e.DisabledAt)
	}
	return s + ")"
}

func joinTypes(ts []xpromo.EventType) string {
	names := make([]string, len(ts))
	for i, t := range ts {
		names[i] = string(t)
	}
	return strings.Join(names, ",")
}

// Events.

func (r *runner) eventsCommand() *cobra.Command {
	return group("events", "the app's events of the last 30 days (what its webhooks deliver)",
		r.eventsListCommand(), r.eventsGetCommand())
}

func (r *runner) eventsListCommand() *cobra.Command {
	var p xpromo.EventParams
	var types []string
	var since string
	cmd := &cobra.Command{
		Use:   "list [--type TYPE,...] [--since RFC3339]",
		Short: "the app's events, oldest first, every page (GET /v1/apps/{app_id}/events)",
		Long: `Reads every event of the app from --since (default and earliest: 30 days ago),
oldest first, following the API's pages. --json prints one {"events": [...]}
document, the events as the API sends them. To follow new events as they
happen, use "xpromo listen".`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if p.Types, err = eventTypes(types); err != nil {
				return err
			}
			if since != "" {
				if p.Since, err = parseTime("--since", since); err != nil {
					return err
				}
			}
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			var events []xpromo.Event
			for ev, err := range c.Events(cmd.Context(), appID, &p) {
				if err != nil {
					return err
				}
				events = append(events, ev)
			}
			if r.g.json {
				if events == nil {
					events = []xpromo.Event{}
				}
				return writeCompactJSON(r.env.Stdout, map[string]any{"events": events})
			}
			if len(events) == 0 {
				_, err := fmt.Fprintln(r.env.Stdout, "no events")
				return err
			}
			t := newTable(r.env.Stdout)
			t.row("CREATED_AT", "ID", "TYPE", "SUMMARY")
			for _, ev := range events {
				t.row(ts(ev.CreatedAt), ev.ID, string(ev.Type), eventSummary(ev))
			}
			return t.flush()
		},
	}
	r.addAppIDFlag(cmd)
	f := cmd.Flags()
	f.StringSliceVar(&types, "type", nil, "only these event types, comma-separated")
	f.StringVar(&since, "since", "", "events at or after this time (RFC 3339)")
	f.IntVar(&p.Limit, "limit", 1000, "events per page requested (the API's limit, 1-1000); every page is read")
	return cmd
}

// writeCompactJSON prints v on one line, like the API's answers (no HTML
// escaping: values appear as the API sent them).
func writeCompactJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(v)
}

func (r *runner) eventsGetCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "get <event_id>",
		Short: "one event with its data (GET /v1/apps/{app_id}/events/{event_id})",
		Args:  exactArgs("<event_id>"),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, appID, err := r.appClient()
			if err != nil {
				return err
			}
			ev, err := c.GetEvent(cmd.Context(), appID, args[0])
			if err != nil {
				return err
			}
			if r.g.json {
				return r.writeRaw()
			}
			return kv(r.env.Stdout,
				[2]string{"id", ev.ID},
				[2]string{"type", string(ev.Type)},
				[2]string{"app_id", ev.AppID},
				[2]string{"created_at", ts(ev.CreatedAt)},
				[2]string{"summary", eventSummary(*ev)},
				[2]string{"data", compactJSON(ev.Data)},
			)
		},
	}
	r.addAppIDFlag(cmd)
	return cmd
}

// parseTime reads an RFC 3339 time given to flag.
func parseTime(flag, v string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, v)
	if err != nil {
		return time.Time{}, usageErr("%s must be an RFC 3339 time like 2026-11-21T09:00:00Z, not %q", flag, v)
	}
	return t, nil
}

// eventSummary says in a few words what an event is about.
func eventSummary(ev xpromo.Event) string {
	prev := func(p *xpromo.ChainState) string {
		if p == nil {
			return "new"
		}
		return string(*p)
	}
	switch ev.Type {
	case xpromo.EventChainStateChanged, xpromo.EventChainCleared, xpromo.EventChainRejected:
		var d xpromo.ChainEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			s := d.Chain.ChainID + " " + prev(d.PreviousState) + " → " + string(d.Chain.State)
			if d.Chain.Reason != nil {
				s += " (" + string(*d.Chain.Reason) + ")"
			}
			return s
		}
	case xpromo.EventFraudFlagged:
		var d xpromo.FraudEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			return string(d.Reason) + " on " + d.Chain.ChainID
		}
	case xpromo.EventPayoutSent:
		var d xpromo.PayoutEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			return d.Payout.PayoutID + " " + eur(d.Payout.AmountCents) + " (transfer " + d.Payout.TransferID + ")"
		}
	case xpromo.EventScoreUpdated:
		var d xpromo.ScoreEventData
		if json.Unmarshal(ev.Data, &d) == nil {
			s := "status " + string(d.Score.Status) + ", reputation " + strconv.Itoa(d.Score.Reputation.Total)
			if len(d.Score.Reasons) > 0 {
				s += " (" + strings.Join(d.Score.Reasons, ", ") + ")"
			}
			return s
		}
	}
	return compactJSON(ev.Data)
}
